"""The engine seam: one engine per runtime, chosen once, named in the statistics.

The reference engine (Python and NumPy) and the native one (the C core) run the same
records, batches and kernels' code: every model's outputs are equal under both, and the
engine that ran says so in ``RunStats.engine``. (CI runs the whole equivalence suite and a
fuzz campaign on each engine: ``make test-engines``.)
"""

from __future__ import annotations

import pytest

import acrobat
from acrobat import native
from acrobat.runtime import engines
from acrobat.runtime.run import prepare
from tests.runtime.helpers import MODELS, POLICIES, assert_outputs_equal, batch, program

needs_native = pytest.mark.skipif(native.load() is None, reason=f"native: {native.status()}")


@needs_native
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("trace_level", ["off", "batches"])
def test_both_engines_give_the_reference(model, trace_level):
    xs, refs = batch(model, 5, 1)
    prog = program(model)
    got = {}
    for engine in engines.ENGINES:
        res = acrobat.run(prog, xs, engine=engine, trace_level=trace_level, strategy="batched")
        assert res.stats.engine.startswith(engine + " (asked for")
        assert_outputs_equal(res.outputs, refs, f"{model} on {engine}")
        got[engine] = res.stats
    # the same records, schedules and launches: only who runs them differs
    for key in ("nodes", "launches", "passes", "lower_bound"):
        assert got["native"][key] == got["reference"][key], key


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_runs_on_the_reference_engine(policy):
    xs, refs = batch("stackrnn", 4, 2)
    res = acrobat.run(program("stackrnn"), xs, policy=policy, engine="reference")
    assert_outputs_equal(res.outputs, refs, policy)
    assert res.stats.native == native.status() and res.stats.host_code.startswith("python")


def test_the_environment_variable_picks_the_engine(monkeypatch):
    spec = acrobat.models.load("treelstm", "tiny")
    prog = acrobat.compile(spec.module, spec.params)  # (no runtime made for it yet)
    monkeypatch.setenv(engines.ENV, "reference")
    rt = prepare(prog, "numpy")
    assert rt.engine.name == "reference" and engines.ENV in rt.engine.why
    monkeypatch.setenv(engines.ENV, "native")
    assert prepare(prog, "numpy") is rt  # chosen once, for the runtime's life


def test_an_unknown_engine_is_a_name_error(monkeypatch):
    with pytest.raises(acrobat.AcrobatNameError, match="unknown engine 'fast'"):
        engines.choose("fast")
    monkeypatch.setenv(engines.ENV, "c")
    with pytest.raises(acrobat.AcrobatNameError, match=engines.ENV):
        engines.choose()


def test_the_native_engine_asked_for_where_its_core_is_off(monkeypatch):
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "_status", "off (test)")
    with pytest.raises(engines.EngineUnavailable, match=r"off \(test\)"):
        engines.choose("native")
    auto = engines.choose()
    assert auto.name == "reference" and "off (test)" in auto.why
    assert auto.flush is None and auto.host_c is None and auto.products.rowprog is None
