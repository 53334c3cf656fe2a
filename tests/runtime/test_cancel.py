"""Cancelling a run (``acrobat.run(..., cancel=token)``): a token set while a kernel runs
stops the run before the next launch, on every engine path (the reference engine's Python
launch loop; the native ``schedule_flush`` and ``run_flush``; the compiled fiber program's
flush), with :class:`acrobat.RunCancelled`; the next run of the same runtime is correct.

Time-free: the first kernel launched sets the token, and the test counts the launches made.
"""

from __future__ import annotations

import pytest

import acrobat
from acrobat import native
from acrobat.runtime.run import prepare
from tests.runtime.helpers import assert_outputs_equal, batch, program

needs_native = pytest.mark.skipif(native.load() is None, reason=f"native: {native.status()}")


class _SetOnFirstLaunch:
    """Wraps every kernel of ``runtime``'s executor (its Python plans and the native flush's
    specs): the first launch sets ``token``; ``calls`` counts launches. Undone by ``undo``."""

    def __init__(self, runtime, token):
        self.ex, self.token, self.calls = runtime.executor, token, 0
        self.saved = (self.ex.plans, self.ex.flush_specs)
        self.ex.plans = [(self.wrap(p[0]), *p[1:]) for p in self.ex.plans]
        self.ex.flush_specs = [(self.wrap(s[0]), *s[1:]) for s in self.ex.flush_specs]

    def wrap(self, fn):
        def launch(*args, **kwargs):
            self.calls += 1
            self.token.set()
            return fn(*args, **kwargs)

        return launch

    def undo(self):
        self.ex.plans, self.ex.flush_specs = self.saved


def _cancel_mid_run(model, engine, policy="acrobat", host_c=None, n=6):
    xs, refs = batch(model, n, 3)
    prog = program(model)
    runtime = prepare(prog, "numpy", engine)
    runtime.host_c_mode = host_c
    first = acrobat.run(prog, xs, policy=policy, engine=engine, strategy="batched")
    assert first.stats.launches > 1
    token = acrobat.CancelToken()
    wrapped = _SetOnFirstLaunch(runtime, token)
    try:
        with pytest.raises(acrobat.RunCancelled):
            acrobat.run(prog, xs, policy=policy, engine=engine, strategy="batched", cancel=token)
    finally:
        wrapped.undo()
    assert wrapped.calls == 1  # the launch under way finished; no other began
    again = acrobat.run(prog, xs, policy=policy, engine=engine, strategy="batched")
    assert_outputs_equal(again.outputs, refs, f"{model} on {engine} after a cancel")
    assert again.stats.launches == first.stats.launches
    return first.stats, again.stats


def test_the_reference_engine_stops_before_the_next_launch():
    _cancel_mid_run("treelstm", "reference")
    _cancel_mid_run("stackrnn", "reference")


@needs_native
def test_the_native_flush_stops_before_the_next_launch():
    stats, _ = _cancel_mid_run("treelstm", "native", host_c="0")  # schedule_flush
    assert stats.engine.startswith("native")
    _cancel_mid_run("treelstm", "native", policy="dynet-depth", host_c="0")  # run_flush


@needs_native
def test_the_compiled_fiber_program_stops_before_the_next_launch():
    first, again = _cancel_mid_run("stackrnn", "native", host_c="1")
    assert first.host_code == again.host_code == "c"


def test_a_token_set_before_the_run_stops_it_at_once():
    xs, refs = batch("birnn", 3, 0)
    prog = program("birnn")
    token = acrobat.CancelToken()
    token.set()
    for strategy in ("batched", "direct"):
        with pytest.raises(acrobat.RunCancelled):
            acrobat.run(prog, xs, strategy=strategy, cancel=token)
    res = acrobat.run(prog, xs, cancel=acrobat.CancelToken())  # a clear token: runs
    assert_outputs_equal(res.outputs, refs, "birnn")


def test_a_cancel_is_not_an_acrobat_error_and_gives_back_the_process():
    """``except AcrobatError`` (bad input) must not swallow a cancel; the recursion limit
    and the collector are back as they were (acrobat.runtime.process)."""
    import gc
    import sys

    assert not issubclass(acrobat.RunCancelled, acrobat.AcrobatError)
    xs, _ = batch("treelstm", 2, 0)
    token = acrobat.CancelToken()
    token.set()
    limit, collecting = sys.getrecursionlimit(), gc.isenabled()
    with pytest.raises(acrobat.RunCancelled):
        acrobat.run(program("treelstm"), xs, cancel=token)
    assert (sys.getrecursionlimit(), gc.isenabled()) == (limit, collecting)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["reference", "native"])
def test_a_berxit_run_cancelled_from_another_thread_stops_quickly(engine):
    """Berxit small at 128 instances (seconds a run, most of it in launches split into
    tiles): set from a timer thread mid-run, the run raises soon after. The guard is
    generous (a loaded machine); the printed time is the number to read."""
    import threading
    import time

    if engine == "native" and native.load() is None:
        pytest.skip(f"native: {native.status()}")
    spec = acrobat.models.load("berxit", "small")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.workload(128, 0)
    acrobat.run(prog, xs[:4], engine=engine)  # kernels compiled, caches warm
    token, fired = acrobat.CancelToken(), []
    timer = threading.Timer(0.5, lambda: (fired.append(time.monotonic()), token.set()))
    timer.start()
    with pytest.raises(acrobat.RunCancelled):
        acrobat.run(prog, xs, engine=engine, strategy="batched", cancel=token)
    stopped = time.monotonic() - fired[0]
    print(f"\n{engine}: stopped {stopped * 1e3:.0f} ms after the token was set")
    assert stopped < 5.0
    res = acrobat.run(prog, xs[:4], engine=engine)
    assert_outputs_equal(res.outputs, [spec.reference(x) for x in xs[:4]], "berxit")
