"""Pieces taken back from a late helper (acrobat/native/smallgemm.c, ``run_two``).

On two threads the helper computes its pieces into scratch and commits each by a
compare-and-swap; a caller that has run out of pieces takes back what a late helper holds
and computes it itself. ``_stall_helper(ns)`` makes the helper sleep inside every piece it
takes, as a preempted helper would, so these tests reach the take-back path on purpose."""

from __future__ import annotations

import gc
import os
import time
import weakref

import numpy as np
import pytest

import acrobat
from acrobat import native

mod = native.load()
pytestmark = pytest.mark.skipif(
    mod is None or not mod.available(),
    reason=f"native kernel unavailable here: {native.status()}",
)

STALL_NS = 4_000_000  # far past the caller's grace (20 us + twice its time per piece)


@pytest.fixture
def stalled():
    mod._stall_helper(STALL_NS)
    try:
        yield
    finally:
        mod._stall_helper(0)
        time.sleep(0.02)  # let the helper wake and leave its last job
        mod._late_calls()  # release what was kept for it


def _operands(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return x, native.pack(np.ascontiguousarray(w.T)), b


def _until_late(call, tries=40):
    """Call ``call()`` until a call ends with a piece taken back from the helper (its
    inputs kept for the helper); returns how many calls that took."""
    for i in range(1, tries + 1):
        call()
        if mod._late_calls():
            return i
        time.sleep(0.001)  # a helper woken on the caller's core gets to run and spin
    return 0


def _settled(seconds: float = 5.0) -> bool:
    """Whether every late helper left its job (what was kept for it released) in time."""
    deadline = time.monotonic() + seconds
    while mod._late_calls() and time.monotonic() < deadline:
        time.sleep(0.002)
    return mod._late_calls() == 0


@pytest.mark.parametrize(
    "m,k,n",
    [(64, 512, 256), (64, 300, 1288), (40, 256, 40), (301, 512, 40), (7, 1024, 512)],
)
def test_a_piece_taken_back_gives_the_same_bits(stalled, m, k, n):
    # by columns (many panels; a last panel of 8), and by rows (few panels, many rows)
    x, panels, b = _operands(m, k, n, seed=m + n)
    for bias in (None, b):
        one = np.empty((m, n), np.float32)
        assert mod.sgemm(x, panels, one, bias, 1) is True
        outs = []

        def call(bias=bias, outs=outs):
            two = np.full((m + 2, n + 8), np.nan, np.float32)  # strided rows, margins kept
            assert mod.sgemm(x, panels, two[1 : m + 1, 4 : n + 4], bias, 2) is True
            outs.append(two)

        assert _until_late(call), "the helper never held a piece the caller took back"
        # the late helper wakes, loses its swap and drops its result (a loaded machine may
        # run it late: waited for, not a fixed sleep)
        assert _settled(), "the late helper never left its job"
        for two in outs:
            np.testing.assert_array_equal(two[1 : m + 1, 4 : n + 4], one)
            assert np.isnan(two[0]).all() and np.isnan(two[m + 1]).all()
            assert np.isnan(two[:, :4]).all() and np.isnan(two[:, n + 4 :]).all()


def test_a_late_helper_keeps_the_inputs_it_reads_alive(stalled):
    # the caller returns while the helper still computes a taken-back piece from x and the
    # weight: both stay alive (their buffers held) until the helper has left the job
    m, k, n = 64, 512, 256
    _, panels0, b = _operands(m, k, n)
    want = None
    for _ in range(40):
        x, panels, _ = _operands(m, k, n)
        if want is None:
            want = np.empty((m, n), np.float32)
            mod.sgemm(x, panels, want, b, 1)
        out = np.empty((m, n), np.float32)
        assert mod.sgemm(x, panels, out, b, 2) is True
        np.testing.assert_array_equal(out, want)
        if mod._late_calls():
            break
        time.sleep(0.001)
    else:
        pytest.fail("the helper never held a piece the caller took back")
    kept_x, kept_w = weakref.ref(x), weakref.ref(panels)
    del x, panels
    gc.collect()
    assert kept_x() is not None and kept_w() is not None  # held for the late helper
    # a call meanwhile runs on one thread (the helper is still inside the late job)
    x2, p2, _ = _operands(m, k, n, seed=5)
    one, two = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    mod.sgemm(x2, p2, one, None, 1)
    assert mod.sgemm(x2, p2, two, None, 2) is True
    np.testing.assert_array_equal(two, one)
    assert _settled()
    gc.collect()
    assert kept_x() is None and kept_w() is None  # released once the helper left


def test_twin_rows_taken_back_give_the_same_bits(stalled):
    rng = np.random.default_rng(3)
    segs = ((1, 40), (0, 7), (2, 17))
    m, k, n = 64, 384, 256
    x = rng.standard_normal((m, k)).astype(np.float32)
    wts = [rng.standard_normal((k, n)).astype(np.float32) for _ in range(3)]
    panels = tuple(native.pack(w) for w in wts)
    biases = tuple(rng.standard_normal(n).astype(np.float32) for _ in range(3))
    one = np.empty((m, n), np.float32)
    assert mod.sgemm_segs(x, panels, one, biases, segs, 1) is True
    outs = []

    def call():
        out = np.full((m, n), np.nan, np.float32)
        assert mod.sgemm_segs(x, panels, out, biases, segs, 2) is True
        outs.append(out)

    assert _until_late(call), "the helper never held a piece the caller took back"
    time.sleep(0.01)
    for out in outs:
        np.testing.assert_array_equal(out, one)


@pytest.mark.parametrize("model", ["treelstm", "birnn"])
def test_a_run_with_a_late_helper_equals_one_thread(stalled, model):
    # a whole run on acrobat's two threads, the helper late in every piece it takes
    # (compared with a run on two threads whose helper is on time: at one thread the
    # products past SMALL_ROWS run on the BLAS, another summation order)
    spec = acrobat.models.load(model, "small")
    xs = spec.instances(8, 2)
    prog = acrobat.compile(spec.module, spec.params)
    mod._stall_helper(0)
    want = acrobat.run(prog, xs, strategy="batched", threads=2).outputs
    mod._stall_helper(STALL_NS)
    for _ in range(3):
        got = acrobat.run(prog, xs, strategy="batched", threads=2).outputs
        assert acrobat.values_equal(got, want)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_of_a_process_with_a_late_helper_runs_two_threads(stalled):
    # the child has no helper (a fork copies no threads): what the parent kept for its late
    # helper is released there, and the child's own helper takes pieces from the start
    m, k, n = 64, 512, 256
    x, panels, b = _operands(m, k, n)
    want = np.empty((m, n), np.float32)
    mod.sgemm(x, panels, want, b, 1)
    out = np.empty((m, n), np.float32)
    assert _until_late(lambda: mod.sgemm(x, panels, out, b, 2)), "no piece was taken back"
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when everything holds
        ok = False
        try:
            mod._stall_helper(0)
            ok = mod._late_calls() == 0
            for _ in range(20):
                got = np.full((m, n), np.nan, np.float32)
                ok = ok and mod.sgemm(x, panels, got, b, 2) and np.array_equal(got, want)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(out, want)
