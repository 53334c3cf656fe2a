"""The registries behind ``acrobat.policies()`` and ``acrobat.backends()``: each policy and
backend is registered once, listed in registration order, and looked up by name."""

from __future__ import annotations

import itertools
import sys

import pytest

import acrobat
from acrobat.backends import (
    AUTO,
    BackendInfo,
    backend_choices,
    get_backend,
    register_backend,
    unregister_backend,
)
from acrobat.errors import AcrobatNameError
from acrobat.runtime.schedule import (
    PolicyInfo,
    dynet_depth_schedule,
    get_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from tests.conftest import _cuda_usable
from tests.runtime.helpers import assert_outputs_equal, batch, program


def test_policies_are_listed_in_their_canonical_order():
    infos = acrobat.policies()
    assert [p.name for p in infos] == ["acrobat", "dynet-depth", "dynet-agenda", "eager"]
    assert all(isinstance(p, PolicyInfo) and p.doc for p in infos)
    assert policy_names() == tuple(p.name for p in infos)


def test_an_unknown_policy_names_the_registered_ones():
    with pytest.raises(AcrobatNameError, match="unknown policy 'fifo'") as e:
        get_policy("fifo")
    assert "dynet-agenda" in e.value.hint
    with pytest.raises(AcrobatNameError, match="unknown policy"):
        acrobat.run(program("treelstm"), batch("treelstm", 2, 0)[0], policy="fifo")


@pytest.fixture
def toy_policy():
    """A registered policy: DyNet's depth batches, kernels in reverse order within a level
    (nodes of one level never feed each other, so the schedule stays valid)."""

    @register_policy("toy")
    def toy(dfg, inline_depth):
        """Depth batches, kernels reversed within a level."""
        levels = itertools.groupby(dynet_depth_schedule(dfg), key=lambda b: b.level)
        return [b for _, group in levels for b in reversed(list(group))]

    yield "toy"
    unregister_policy("toy")


def test_a_registered_policy_runs_through_the_facade(toy_policy):
    assert acrobat.policies()[-1] == PolicyInfo(
        "toy", "Depth batches, kernels reversed within a level."
    )
    xs, refs = batch("treelstm", 4, 0)
    toy = acrobat.run(program("treelstm"), xs, policy=toy_policy, trace_level="batches")
    assert_outputs_equal(toy.outputs, refs, "treelstm under the toy policy")
    depth = acrobat.run(program("treelstm"), xs, policy="dynet-depth")
    assert toy.stats["launches"] == depth.stats["launches"]
    formed = [e.policy for e in toy.trace.events if e.kind == "ScheduleFormed"]
    assert formed and set(formed) == {toy_policy}


def test_a_policy_is_registered_once(toy_policy):
    with pytest.raises(AcrobatNameError, match="registered twice"):
        register_policy(toy_policy)(lambda dfg, inline_depth: [])


def test_unregistering_forgets_the_policy(toy_policy):
    unregister_policy(toy_policy)
    assert toy_policy not in policy_names()
    register_policy(toy_policy)(lambda dfg, inline_depth: [])  # the fixture removes it again
    with pytest.raises(AcrobatNameError):
        unregister_policy("never-registered")


def test_backends_report_where_they_can_run():
    infos = {b.name: b for b in acrobat.backends()}
    assert list(infos) == ["numpy", "null", "cupy"]  # "auto" is a choice, not a backend
    assert all(isinstance(b, BackendInfo) for b in infos.values())
    assert infos["numpy"] == BackendInfo("numpy", True, "", infos["numpy"].doc)
    assert infos["null"].available and infos["null"].reason == ""
    cupy = infos["cupy"]
    assert cupy.available == _cuda_usable()
    assert bool(cupy.reason) != cupy.available  # a reason exactly when it cannot run


def test_the_reason_is_the_error_get_backend_raises(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as if CuPy were not installed
    cupy = next(b for b in acrobat.backends() if b.name == "cupy")
    assert not cupy.available and "CuPy, which is not installed" in cupy.reason


def test_backend_choices_end_with_auto():
    assert backend_choices() == ("numpy", "null", "cupy", AUTO)
    with pytest.raises(AcrobatNameError, match="unknown backend") as e:
        get_backend("tpu")
    assert "'auto'" in e.value.hint


def test_a_registered_backend_is_listed_and_built():
    built = []

    def factory():
        backend = get_backend("null")
        built.append(backend)
        return backend

    register_backend("toy", factory, check=lambda: (False, "toy says no"), doc="a test")
    try:
        assert acrobat.backends()[-1] == BackendInfo("toy", False, "toy says no", "a test")
        assert backend_choices()[-2:] == ("toy", AUTO)
        assert get_backend("toy") is built[0]
        with pytest.raises(AcrobatNameError, match="registered twice"):
            register_backend("toy", factory)
    finally:
        unregister_backend("toy")
    assert "toy" not in backend_choices()
    with pytest.raises(AcrobatNameError, match="not a backend"):
        register_backend(AUTO, factory)


def test_acrobat_backends_is_the_package_and_callable():
    """``acrobat.backends()`` lists the backends, and ``acrobat.backends`` stays the package
    for every spelling of an import."""
    import importlib

    import acrobat.backends as package
    from acrobat.backends import get_backend as again

    assert package is acrobat.backends is importlib.import_module("acrobat.backends")
    assert again is get_backend and acrobat.backends.get_backend is get_backend
    assert acrobat.backends() == package.backends()


def test_only_the_acrobat_policy_keys_its_levels_by_phase():
    """The executor marks phase boundaries only for policies whose batch levels are record
    keys (phase * STRIDE + depth): today only ``acrobat``."""
    from acrobat.runtime.schedule import policy_info

    keyed = {p.name for p in acrobat.policies() if p.keyed_levels}
    assert keyed == {"acrobat"} and policy_info("acrobat").keyed_levels
    with pytest.raises(AcrobatNameError, match="unknown policy"):
        policy_info("no-such-policy")


@pytest.mark.parametrize("policy", ["acrobat", "dynet-depth"])
def test_phase_boundaries_follow_the_policy_flag(policy):
    """BiRNN has a phase(): the acrobat schedule's trace marks it, others have no phases."""
    xs, _ = batch("birnn", 3, 0)
    res = acrobat.run(program("birnn"), xs, policy=policy, trace_level="batches")
    marks = [e for e in res.trace.events if e.kind == "PhaseBoundary"]
    assert bool(marks) == (policy == "acrobat")
