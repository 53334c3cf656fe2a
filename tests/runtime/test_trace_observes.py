"""Tracing observes the run; it does not switch paths.

A traced run (trace level "batches") runs the flush the untraced run runs — on the NumPy
backend with the native module, the native flush runner, never the executor's Python
launch loop — and records its times at boundaries that path already has. Its batches are
the ones Python's scheduler forms for the same records (trace level "nodes" schedules in
Python to name every node's batch), and its events are made only when the trace is read.
"""

from __future__ import annotations

import pytest

import acrobat
from acrobat import native
from acrobat.runtime.executor import Executor
from acrobat.trace import BatchFormed, KernelLaunched, ScheduleFormed
from tests.runtime.helpers import MODELS, assert_outputs_equal, batch, program

needs_native = pytest.mark.skipif(native.load() is None, reason=f"native: {native.status()}")


@needs_native
@pytest.mark.parametrize("model", MODELS)
def test_a_traced_run_takes_the_untraced_path(model, monkeypatch):
    xs, refs = batch(model, 6, 2)
    prog = program(model)
    off = acrobat.run(prog, xs, trace_level="off", strategy="batched")

    def python_loop(*args, **kw):
        raise AssertionError("a traced run fell back to the executor's Python loop")

    monkeypatch.setattr(Executor, "plan", python_loop)
    on = acrobat.run(prog, xs, trace_level="batches", strategy="batched")
    assert_outputs_equal(on.outputs, refs, model)
    for key in ("launches", "nodes", "passes", "host_code"):
        assert on.stats[key] == off.stats[key], key
    launched = on.trace.of(KernelLaunched)
    assert len(launched) == on.stats.launches
    assert sum(e.size for e in launched) == on.stats.nodes
    formed = on.trace.of(ScheduleFormed)
    assert len(formed) == on.stats.passes
    assert sum(e.batches for e in formed) == on.stats.launches
    assert sum(e.lower_bound for e in formed) == on.stats.lower_bound


@pytest.mark.parametrize("model", MODELS)
def test_native_batches_are_the_python_schedulers(model):
    """The batches a "batches" trace shows (the native leveled schedule) are those of the
    "nodes" trace (scheduled in Python), launch for launch."""
    xs, _ = batch(model, 6, 3)
    prog = program(model)

    def batches(level):
        res = acrobat.run(prog, xs, trace_level=level, strategy="batched")
        return [(e.run_pass, e.index, e.kernel, e.size, e.level) for e in res.trace.of(BatchFormed)]

    assert batches("batches") == batches("nodes")


def test_launch_times_are_ordered_inside_the_run():
    xs, _ = batch("stackrnn", 8, 0)
    res = acrobat.run(program("stackrnn"), xs, trace_level="batches", strategy="batched")
    last = 0.0
    for e in res.trace.of(KernelLaunched):
        assert last - 1e-6 <= e.gather_start_ms <= e.start_ms <= e.end_ms <= e.scatter_end_ms
        assert e.scatter_end_ms <= res.stats.total_ms
        last = e.scatter_end_ms


def test_events_are_made_when_the_trace_is_first_read():
    xs, _ = batch("treelstm", 4, 0)
    res = acrobat.run(program("treelstm"), xs, trace_level="batches", strategy="batched")
    assert res.trace._deferred  # nothing made yet
    n = len(res.trace)
    assert not res.trace._deferred and n == len(res.trace.events)
    assert len(res.trace.of(KernelLaunched)) == res.stats.launches
