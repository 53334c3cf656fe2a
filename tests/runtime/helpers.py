"""Shared helpers for the runtime tests: cached tiny models and programs, DFG capture."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import acrobat
import acrobat.runtime.run as run_module
from acrobat.runtime.dfg import DFG
from acrobat.runtime.executor import Executor
from acrobat.runtime.schedule import Schedule

MODELS = acrobat.models.MODEL_NAMES + acrobat.models.VARIANTS
POLICIES = tuple(p.name for p in acrobat.policies())  # the registered ones, in order
# Models with tensor-dependent decisions (item/argmax): they run as fibers.
FIBER_MODELS = ("berxit", "drnn", "stackrnn")
# The others never read a tensor value: the null backend (all zeros) takes the same
# paths as the numpy backend, so output shapes and launch counts must agree.
STATIC_MODELS = tuple(m for m in MODELS if m not in FIBER_MODELS)
RANDOM_MODELS = tuple(m.name for m in acrobat.models.catalog() if "random" in m.decisions)

# Batched float32 matmuls sum in a different order than the per-instance reference
# interpreter, so results agree to rounding, not bit for bit: hence rtol 1e-4.
RTOL, ATOL = 1e-4, 1e-5


@functools.cache
def spec(name: str, decisions: str = "tensor") -> acrobat.models.ModelSpec:
    """A model at the tiny size."""
    return acrobat.models.load(name, "tiny", decisions=decisions)


@functools.cache
def program(name: str, disabled: tuple[str, ...] = (), decisions: str = "tensor"):
    """The compiled program, cached: runs reuse one program (and its runtime), as users do."""
    s = spec(name, decisions)
    return acrobat.compile(s.module, s.params, acrobat.CompileOptions().without(*disabled))


@functools.cache
def batch(name: str, n: int, seed: int, decisions: str = "tensor") -> tuple[list, list]:
    """``n`` seeded instances and the reference interpreter's result for each."""
    s = spec(name, decisions)
    xs = s.instances(n, seed)
    return xs, [s.evaluate(x) for x in xs]


def assert_outputs_equal(outputs: list, refs: list, what: str = "") -> None:
    """Batched outputs equal the per-instance references (to float32 rounding)."""
    assert len(outputs) == len(refs), what
    for i, (got, want) in enumerate(zip(outputs, refs)):
        assert acrobat.values_equal(got, want, rtol=RTOL, atol=ATOL), f"{what}: instance {i}"


def shapes(value: Any) -> Any:
    """The value with every tensor replaced by its shape (structure kept)."""
    if isinstance(value, np.ndarray):
        return ("tensor", value.shape)
    if isinstance(value, acrobat.AdtValue):
        return (value.ctor, tuple(shapes(f) for f in value.fields))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(shapes(f) for f in value))
    return value


@contextlib.contextmanager
def captured_schedules() -> Iterator[list[tuple[DFG, Schedule]]]:
    """Every (DFG, Schedule) pair the runtime forms while the block runs, in order (the
    acrobat policy's flushes are scheduled in Python meanwhile, not in the one native call
    of ``Executor.run_leveled``, which gives the same batches: test_flush_native.py)."""
    seen: list[tuple[DFG, Schedule]] = []
    real = run_module.schedule

    def spy(dfg, policy, *args, **kw):
        sched = real(dfg, policy, *args, **kw)
        seen.append((dfg, sched))
        return sched

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module, "schedule", spy)
        mp.setattr(Executor, "run_leveled", lambda self, dfg, table, log=None: None)
        # (and the compiled fiber program's flushes in C, which schedule natively too)
        mp.setattr(run_module.Runtime, "fiber_flush", lambda self, st, hs, take: None)
        yield seen


BAD_TOKEN_SOURCE = """
H = Size("H", 4)
V = Size("V", 10)
E: Param[V, H]
W1: Param[H, H]
W2: Param[H, H]

def look(w: int, W: Tensor[H, H]) -> Tensor[H]:
    return tanh(dense(embed(E, w), W))

def main(w: int) -> tuple[Tensor[H], Tensor[H]]:
    return parallel(look(w, W1), look(w, W2))
"""
"""One embedding lookup under two weights: its two specializations are twin kernels. Run
on ``[1, 7, 12, 3]``, instance 2's id is out of range (V = 10)."""


def bad_token_program(twins: bool = True):
    """:data:`BAD_TOKEN_SOURCE` compiled without embedding tables (which would tabulate
    each clone into a table of its own), with twin launches on or off."""
    from acrobat.frontend import parse

    module = parse(BAD_TOKEN_SOURCE)
    rng = np.random.default_rng(0)
    params = {p.name: rng.standard_normal(p.ty.shape).astype(np.float32) for p in module.params}
    options = acrobat.CompileOptions().without("embedding_tables")
    if not twins:
        options = options.without("twin_launches")
    return acrobat.compile(module, params, options)


def run_host_c(prog, xs, mode: str):
    """An untraced batched run of ``prog`` on ``xs`` with the acrobat policy and the host
    program ``mode`` picks: "1" the compiled (C) one, "0" the Python one."""
    from acrobat.runtime.run import prepare

    rt = prepare(prog)
    old = rt.host_c_mode
    rt.host_c_mode = mode
    try:
        return acrobat.run(prog, xs, policy="acrobat", strategy="batched", trace_level="off")
    finally:
        rt.host_c_mode = old
