"""Shared traces for the viz tests: small real runs, made once per session."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import acrobat
from acrobat.ir import AdtValue
from acrobat.trace import Trace


@dataclass(frozen=True)
class Runs:
    """One compiled model and its run traces by policy."""

    compile: Trace
    runs: dict[str, Trace]


def _runs(name: str, size: str, instances: list, policies=("acrobat", "dynet-depth", "eager")):
    spec = acrobat.models.load(name, size)
    program = acrobat.compile(spec.module, spec.params)
    traces = {
        policy: acrobat.run(program, instances, policy=policy, trace_level="nodes").trace
        for policy in policies
    }
    return Runs(program.trace, traces)


@pytest.fixture(scope="session")
def treelstm() -> Runs:
    """TreeLSTM (tiny) on 4 seeded trees, under acrobat, dynet-depth and eager."""
    spec = acrobat.models.load("treelstm", "tiny")
    return _runs("treelstm", "tiny", spec.instances(4, seed=0))


@pytest.fixture(scope="session")
def two_leaves() -> Runs:
    """TreeLSTM (tiny) on one tree with two leaves: a DFG of 3 nodes and 2 edges."""
    tree = AdtValue("Node", (AdtValue("Leaf", (1,)), AdtValue("Leaf", (2,))))
    return _runs("treelstm", "tiny", [tree], policies=("acrobat",))


@pytest.fixture(scope="session")
def stackrnn() -> Runs:
    """StackRNN (tiny): tensor-dependent control flow, several run passes per run."""
    spec = acrobat.models.load("stackrnn", "tiny")
    return _runs("stackrnn", "tiny", spec.instances(4, seed=0), policies=("acrobat", "eager"))
