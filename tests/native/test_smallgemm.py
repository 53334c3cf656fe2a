"""acrobat.native: the small-row GEMM built from C on first use, and its NumPy fallback.

The kernel must equal ``x @ W.T (+ b)`` for every shape and layout it accepts, decline
(answer False, write nothing) every one it does not, and the generated kernels must give
the same model outputs with it on or off.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.runtime.run import prepare
from tests.runtime.helpers import batch

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"native kernel unavailable here: {native.status()}"
)


def _operands(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return x, w, b


def test_the_kernel_builds_here():
    # this project's machines (x86-64 with AVX2, gcc) must run the native path, or the
    # speed it buys is silently lost
    if sys.platform.startswith("linux") and os.uname().machine == "x86_64":
        assert native.load() is not None, native.status()
        assert native.status() in ("installed", "built", "loaded")


@needs_native
@pytest.mark.parametrize("n", [8, 16, 24, 256, 1280])
@pytest.mark.parametrize("m", [1, 2, 5, 6, 7, 12, 13, 32])
@pytest.mark.parametrize("k", [0, 1, 7, 256])
def test_sgemm_equals_numpy(m, k, n):
    x, w, b = _operands(m, k, n, seed=m * 1000 + k + n)
    wt = np.ascontiguousarray(w.T)
    panels = native.pack(wt)
    assert panels.shape == (-(-n // 16), k, 16)
    for bias in (None, b):
        out = np.full((m, n), np.nan, np.float32)
        assert native.load().sgemm(x, panels, out, bias) is True
        want = x @ wt + (0 if bias is None else bias)
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5 * max(1, k))


@needs_native
def test_strided_rows_in_and_out():
    x, w, b = _operands(9, 64, 40)
    big = np.zeros((9, 100), np.float32)
    big[:, 10:74] = x
    xs = big[:, 10:74]  # rows 400 bytes apart, unit stride inside a row
    out_big = np.zeros((9, 50), np.float32)
    out = out_big[:, 5:45]
    wt = np.ascontiguousarray(w.T)
    assert native.load().sgemm(xs, native.pack(wt), out, b)
    np.testing.assert_allclose(out, x @ wt + b, rtol=2e-5, atol=1e-4)
    assert not out_big[:, :5].any() and not out_big[:, 45:].any()  # nothing else written


@needs_native
def test_a_row_gives_the_same_bits_whatever_its_batch():
    x, w, _ = _operands(32, 256, 256)
    panels = native.pack(np.ascontiguousarray(w.T))
    mod = native.load()
    whole = np.empty((32, 256), np.float32)
    mod.sgemm(x, panels, whole, None)
    for m in (1, 3, 7, 13):
        part = np.empty((m, 256), np.float32)
        mod.sgemm(x[5 : 5 + m], panels, part, None)
        assert np.array_equal(part, whole[5 : 5 + m])


@needs_native
def test_unsupported_layouts_are_declined_and_nothing_is_written():
    mod = native.load()
    x, w, b = _operands(4, 32, 16)
    panels = native.pack(np.ascontiguousarray(w.T))
    out = np.full((4, 16), 7.0, np.float32)
    declined = [
        (x.astype(np.float64), panels, out, None),  # not float32
        (np.asfortranarray(x), panels, out, None),  # no unit stride along K
        (x, panels, np.asfortranarray(out), None),  # nor along N
        (x[:, :16], panels, out, None),  # K does not match the panels
        (x, panels, out[:3], None),  # M does not match
        (x, panels, out, b[:8]),  # bias of the wrong length
        (x, panels, out, b.astype(np.float64)),
        (x, panels[:, :, :8].copy(), out, None),  # panels not 16 wide
        (x, panels, out.reshape(4, 2, 8), None),  # not 2-d
    ]
    for args in declined:
        assert mod.sgemm(*args) is False
        assert (out == 7.0).all()
    alias = np.zeros((4, 48), np.float32)  # the output overlaps the input
    alias[:, :32] = x
    assert mod.sgemm(alias[:, :32], panels, alias[:, 32:48], None) is False
    with pytest.raises(TypeError):
        mod.sgemm(x, panels, out)


def test_pack_refuses_what_the_kernel_cannot_take():
    assert native.pack(np.zeros((4, 12), np.float32)) is None  # N not a multiple of 8
    assert native.pack(np.zeros((4, 16), np.float64)) is None
    assert native.pack(np.zeros((2, 4, 16), np.float32)) is None


def test_dense_rows_falls_back_to_numpy_beyond_small_rows_and_when_off(monkeypatch):
    x, w, b = _operands(native.SMALL_ROWS + 5, 16, 12)  # N = 12: no panels
    wt = np.ascontiguousarray(w.T)
    out = np.empty((x.shape[0], 12), np.float32)
    np.testing.assert_allclose(native.dense_rows(x, wt, None, out, b), x @ wt + b, rtol=1e-5)
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "_status", "off (test)")
    out2 = np.empty_like(out)
    np.testing.assert_allclose(native.dense_rows(x[:4], wt, None, out2[:4], b), x[:4] @ wt + b)


def _fresh_process(env_extra: dict, tmp_path) -> str:
    code = (
        "from acrobat import native; native.load(); print(native.status()); print(native.load_ms())"
    )
    env = {**os.environ, "ACROBAT_CACHE_DIR": str(tmp_path), "ACROBAT_NATIVE_INSTALLED": "0"}
    env.update(env_extra)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[0]


@needs_native
def test_built_once_then_loaded_from_the_disk_cache(tmp_path):
    assert _fresh_process({}, tmp_path) == "built"
    assert _fresh_process({}, tmp_path) == "loaded"
    assert len(list(tmp_path.glob(f"_acrobat_native-*{native.cache.SUFFIX}"))) == 1


def test_off_without_a_compiler_or_when_asked(tmp_path):
    assert _fresh_process({"ACROBAT_NATIVE": "0"}, tmp_path) == "off (ACROBAT_NATIVE=0)"
    status = _fresh_process({"CC": "/nonexistent/cc"}, tmp_path)
    assert status.startswith("off (") and "/nonexistent/cc" in status


def _without_native(monkeypatch, prog):
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "_status", "off (test)")
    return prepare(prog, "numpy")


@needs_native
@pytest.mark.parametrize("model", ["treelstm", "birnn", "nestedrnn", "drnn", "stackrnn"])
def test_model_outputs_are_the_same_with_the_native_kernel_on_and_off(model, monkeypatch):
    spec = acrobat.models.load(model, size="tiny")
    xs, _ = batch(model, 5, 0)
    on = acrobat.compile(spec.module, spec.params)
    native_calls = ("_dense_rows(", "_dense_from(")  # the product; with its gather fused
    srcs = prepare(on, "numpy").sources.values()
    assert any(c in src for src in srcs for c in native_calls)
    res_on = acrobat.run(on, xs, strategy="batched")
    off = acrobat.compile(spec.module, spec.params)
    runtime_off = _without_native(monkeypatch, off)
    assert not any(c in src for src in runtime_off.sources.values() for c in native_calls)
    res_off = acrobat.run(off, xs, strategy="batched")
    for a, b, x in zip(res_on.outputs, res_off.outputs, xs):
        assert acrobat.values_equal(a, b, rtol=1e-4, atol=1e-5)
        assert acrobat.values_equal(a, spec.evaluate(x), rtol=1e-4, atol=1e-5)


@needs_native
def test_the_rule_follows_the_blas_threads(monkeypatch):
    calls = []
    real = native.load()

    class Spy:
        def sgemm(self, *args):
            calls.append(args[0].shape[0])
            assert args[4:] in ((), (1,))  # not own threads: one thread
            return real.sgemm(*args)

    monkeypatch.setattr(native, "_module", Spy())
    x, w, _ = _operands(48, 256, 256)
    wt = np.ascontiguousarray(w.T)
    panels = native.pack(wt)
    out = np.empty((48, 256), np.float32)
    try:
        native.set_threads(1)  # one BLAS thread: native up to SMALL_ROWS rows
        native.dense_rows(x, wt, panels, out)
        native.dense_rows(x[:8], wt, panels, out[:8])
        assert calls == [48, 8]
        calls.clear()
        native.set_threads(2)  # two: only the small products (48 x 256 x 256 > 2.5e6)
        native.dense_rows(x, wt, panels, out)
        native.dense_rows(x[:8], wt, panels, out[:8])
        assert calls == [8]
        np.testing.assert_allclose(out, x @ wt, rtol=1e-5, atol=1e-4)
    finally:
        native.set_threads(2)


def test_a_run_sets_the_rule_from_its_threads(monkeypatch):
    seen = []
    monkeypatch.setattr(native, "set_threads", seen.append)
    xs, _ = batch("birnn", 2, 0)
    spec = acrobat.models.load("birnn", size="tiny")
    prog = acrobat.compile(spec.module, spec.params)
    res = acrobat.run(prog, xs, strategy="batched", threads=1)
    if res.stats.blas_threads:  # a BLAS under control: the run told the rule
        assert seen[0] == 1


@needs_native
@pytest.mark.parametrize("n", [8, 16, 24, 40, 64, 256, 1280])
@pytest.mark.parametrize("m", [1, 2, 7, 11, 12, 13, 25, 64, 100, 301])
def test_two_threads_give_the_same_bits_as_one(m, n):
    # cut by columns (four panels or more, or few rows) or by rows: every output element
    # is summed in the same order, so the bits do not depend on the threads
    x, w, b = _operands(m, 96, n, seed=m * 10 + n)
    panels = native.pack(np.ascontiguousarray(w.T))
    mod = native.load()
    for bias in (None, b):
        one = np.full((m, n), np.nan, np.float32)
        two = np.full((m + 2, n + 8), np.nan, np.float32)  # strided rows, a margin kept
        assert mod.sgemm(x, panels, one, bias, 1) is True
        assert mod.sgemm(x, panels, two[1 : m + 1, 4 : n + 4], bias, 2) is True
        np.testing.assert_array_equal(two[1 : m + 1, 4 : n + 4], one)
        assert np.isnan(two[0]).all() and np.isnan(two[m + 1]).all()
        assert np.isnan(two[:, :4]).all() and np.isnan(two[:, n + 4 :]).all()


@needs_native
def test_two_threads_from_many_python_threads_at_once():
    # one two-thread product runs at a time; a call that finds the helper taken runs on
    # its own thread: every result is still right
    import threading

    x, w, b = _operands(40, 256, 256)
    panels = native.pack(np.ascontiguousarray(w.T))
    mod = native.load()
    want = np.empty((40, 256), np.float32)
    mod.sgemm(x, panels, want, b)
    bad = []

    def work():
        out = np.empty((40, 256), np.float32)
        for _ in range(200):
            out[...] = np.nan
            mod.sgemm(x, panels, out, b, 2)
            if not np.array_equal(out, want):
                bad.append(1)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad


@needs_native
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_two_threads_in_a_forked_child():
    # a fork copies no threads: the child starts its own helper
    x, w, _ = _operands(30, 128, 128)
    panels = native.pack(np.ascontiguousarray(w.T))
    mod = native.load()
    want = np.empty((30, 128), np.float32)
    mod.sgemm(x, panels, want, None, 2)  # the parent's helper is running
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only when its product is right
        ok = False
        try:
            out = np.empty_like(want)
            ok = mod.sgemm(x, panels, out, None, 2) and np.array_equal(out, want)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


@needs_native
def test_own_threads_rule_takes_every_product_and_cuts_the_large(monkeypatch):
    calls = []
    real = native.load()

    class Spy:
        def sgemm(self, x, panels, out, bias, threads=1):
            calls.append((x.shape[0], threads))
            return real.sgemm(x, panels, out, bias, threads)

    monkeypatch.setattr(native, "_module", Spy())
    x, w, _ = _operands(native.SMALL_ROWS + 36, 256, 256)
    wt = np.ascontiguousarray(w.T)
    panels = native.pack(wt)
    out = np.empty((x.shape[0], 256), np.float32)
    try:
        native.set_threads(2, own=True)
        assert native.two_threads()
        native.dense_rows(x, wt, panels, out)  # past SMALL_ROWS: still native, two threads
        native.dense_rows(x[:4], wt, panels, out[:4])  # 4 x 256 x 256 < TWO_THREAD_MACS
        assert calls == [(x.shape[0], 2), (4, 1)]
        np.testing.assert_allclose(out, x @ wt, rtol=1e-5, atol=1e-4)
        calls.clear()
        native.set_threads(1, own=True)  # one thread: the one-thread rule
        assert not native.two_threads()
        native.dense_rows(x, wt, panels, out)
        assert calls == []  # past SMALL_ROWS: NumPy
    finally:
        native.set_threads(2)
    assert not native.two_threads()


@needs_native
@pytest.mark.parametrize(
    "segs",
    [((0, 5), (1, 3)), ((1, 40), (0, 7), (2, 13)), ((0, 0), (1, 9)), ((2, 70),), ((1, 1),)],
)
@pytest.mark.parametrize("k", [0, 96])
def test_twin_rows_in_one_call_equal_each_member_apart(segs, k):
    # a twin group's batch: each member's rows by its weight, one call, one or two threads
    rng = np.random.default_rng(len(segs) + k)
    m = sum(n for _, n in segs)
    x = rng.standard_normal((m, k)).astype(np.float32)
    wts = [rng.standard_normal((k, 48)).astype(np.float32) for _ in range(3)]
    panels = tuple(native.pack(w) for w in wts)
    biases = tuple(rng.standard_normal(48).astype(np.float32) for _ in range(3))
    mod = native.load()
    for bias in (None, biases):
        want = np.empty((m, 48), np.float32)
        s = 0
        for member, n in segs:
            b = None if bias is None else bias[member]
            want[s : s + n] = x[s : s + n] @ wts[member] + (0 if b is None else b)
            s += n
        for threads in (1, 2):
            out = np.full((m, 48), np.nan, np.float32)
            assert mod.sgemm_segs(x, panels, out, bias, segs, threads) is True
            np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-4)
            # and the same bits as the one-product kernel on each member's rows
            s = 0
            for member, n in segs:
                one = np.empty((n, 48), np.float32)
                b = None if bias is None else bias[member]
                mod.sgemm(x[s : s + n], panels[member], one, b)
                np.testing.assert_array_equal(out[s : s + n], one)
                s += n
        got = native.dense_rows_by_member(x, wts, panels, segs, np.empty((m, 48), np.float32), bias)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-4)


@needs_native
def test_twin_rows_the_kernel_cannot_take_are_declined_untouched():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 32)).astype(np.float32)
    wts = [rng.standard_normal((32, 16)).astype(np.float32) for _ in range(2)]
    panels = tuple(native.pack(w) for w in wts)
    mod = native.load()
    out = np.full((10, 16), np.nan, np.float32)
    for segs in (
        ((0, 9),),  # does not cover the rows
        ((0, 6), (1, 5)),  # past them
        ((2, 10),),  # no such member
        ((0, -1), (1, 11)),  # negative rows
        tuple((i % 2, 1) for i in range(10)) + ((0, 0),) * 10,  # too many segments
        ((0, "5"), (1, 5)),  # not ints
    ):
        assert mod.sgemm_segs(x, panels, out, None, segs, 2) is False
        assert np.isnan(out).all(), segs
    wrong = (panels[0], native.pack(rng.standard_normal((32, 24)).astype(np.float32)))
    assert mod.sgemm_segs(x, wrong, out, None, ((0, 5), (1, 5)), 1) is False  # a wrong width
    assert mod.sgemm_segs(x, panels, x[:, :16], None, ((0, 10),), 1) is False  # out overlaps x
    assert np.isnan(out).all()
    # a member without panels: each member apart, NumPy for that one
    got = native.dense_rows_by_member(
        x, wts, (panels[0], None), ((0, 4), (1, 6)), np.empty((10, 16), np.float32)
    )
    np.testing.assert_allclose(got[:4], x[:4] @ wts[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[4:], x[4:] @ wts[1], rtol=1e-5, atol=1e-5)


# -- rows read where they lie: the gather (and a concat) fused into the product ----------


def _arena(rows, width, seed):
    return np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)


@needs_native
@pytest.mark.parametrize("m", [1, 5, 6, 7, 13, 64, 100])
@pytest.mark.parametrize("n", [8, 48, 256])
@pytest.mark.parametrize("layout", ["one pair", "two pairs", "array and pair", "block"])
def test_rows_read_in_place_give_the_gathered_products_bits(m, n, layout):
    rng = np.random.default_rng(m * 7 + n)
    buf = _arena(3 * m + 9, 40, m)
    other = _arena(m + 3, 24, n)
    scattered = rng.integers(0, buf.shape[0], m)  # repeats allowed, any order
    if layout == "one pair":
        parts, x = ((buf, scattered),), buf[scattered]
    elif layout == "two pairs":  # concat(a, b) of two arguments of one arena
        again = rng.permutation(buf.shape[0])[:m]
        parts, x = ((buf, scattered), (buf, again)), np.hstack([buf[scattered], buf[again]])
    elif layout == "array and pair":
        rows = rng.integers(0, other.shape[0], m)
        head = _arena(m, 16, 3)
        parts, x = (head, (other, rows)), np.hstack([head, other[rows]])
    else:
        block = np.arange(4, 4 + m)
        parts, x = ((buf, block),), buf[block]
    k = x.shape[1]
    w = rng.standard_normal((k, n)).astype(np.float32)
    panels, bias = native.pack(w), rng.standard_normal(n).astype(np.float32)
    mod = native.load()
    for b in (None, bias):
        want = np.empty((m, n), np.float32)
        assert mod.sgemm(np.ascontiguousarray(x), panels, want, b) is True
        np.testing.assert_allclose(want, x @ w + (0 if b is None else b), rtol=2e-5, atol=1e-4)
        for threads in (1, 2):
            out = np.full((m, n), np.nan, np.float32)
            assert mod.sgemm(parts, panels, out, b, threads) is True
            np.testing.assert_array_equal(out, want)  # the same sums in the same order


@needs_native
def test_an_output_in_the_same_arena_as_its_inputs_is_fine_unless_it_overlaps_them():
    # an arena holds a step's inputs and its outputs (other rows): that is the usual case
    arena = _arena(20, 32, 0)
    w = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32)
    panels = native.pack(w)
    rows = np.array([3, 0, 7, 5])
    want = arena[rows] @ w
    mod = native.load()
    assert mod.sgemm(((arena, rows),), panels, arena[10:14], None) is True
    np.testing.assert_allclose(arena[10:14], want, rtol=2e-5, atol=1e-4)
    before = arena.copy()
    assert mod.sgemm(((arena, np.array([3, 12, 1, 2])),), panels, arena[10:14], None) is False
    np.testing.assert_array_equal(arena, before)  # row 12 is written: declined, untouched


@needs_native
def test_parts_the_kernel_cannot_take_are_declined_untouched():
    buf = _arena(10, 16, 0)
    panels = native.pack(np.ones((16, 8), np.float32))
    panels32 = native.pack(np.ones((32, 8), np.float32))
    mod = native.load()
    out = np.full((3, 8), np.nan, np.float32)
    ok = np.array([1, 2, 3])
    for parts, p in (
        (((buf, np.array([1, 2, 10])),), panels),  # a row past the arena
        (((buf, np.array([1, -1, 3])),), panels),  # a negative row
        (((buf, ok.astype(np.int32)),), panels),  # not int64 row numbers
        (((buf, ok.reshape(3, 1)),), panels),  # not a vector of rows
        (((buf, ok[::2]),), panels),  # fewer rows than out
        (((buf, ok), (buf, ok[:2])), panels32),  # parts that disagree on the rows
        (((buf.astype(np.float64), ok),), panels),  # not float32
        (((buf, ok, ok),), panels),  # not a pair
        (((buf[:, ::2], ok),), native.pack(np.ones((8, 8), np.float32))),  # strided columns
        (((buf, ok),) * 9, native.pack(np.ones((144, 8), np.float32))),  # nine parts
        ((), panels),  # no part
        (((buf, ok),), panels32),  # the weight's K is not the parts' widths
        (("rows", ok), panels),
    ):
        assert mod.sgemm(parts, p, out, None) is False, parts
        assert np.isnan(out).all()


@needs_native
@pytest.mark.parametrize("segs", [((0, 5), (1, 3)), ((1, 40), (0, 7), (2, 13)), ((0, 0), (1, 9))])
def test_twin_rows_read_in_place_equal_the_gathered_call(segs):
    rng = np.random.default_rng(len(segs))
    m = sum(n for _, n in segs)
    arena = _arena(2 * m + 5, 48, 2)
    ra, rb = rng.integers(0, arena.shape[0], m), rng.integers(0, arena.shape[0], m)
    x = np.hstack([arena[ra], arena[rb]])
    wts = [rng.standard_normal((96, 32)).astype(np.float32) for _ in range(3)]
    panels = tuple(native.pack(w) for w in wts)
    biases = tuple(rng.standard_normal(32).astype(np.float32) for _ in range(3))
    mod = native.load()
    for bias in (None, biases):
        want = np.empty((m, 32), np.float32)
        assert mod.sgemm_segs(x, panels, want, bias, segs, 1) is True
        for threads in (1, 2):
            out = np.full((m, 32), np.nan, np.float32)
            parts = ((arena, ra), (arena, rb))
            assert mod.sgemm_segs(parts, panels, out, bias, segs, threads) is True
            np.testing.assert_array_equal(out, want)


@needs_native
def test_dense_from_gathers_and_falls_back_when_the_kernel_does_not_take_it(monkeypatch):
    from acrobat.runtime.engines.native import PRODUCTS

    dense_from, dense_from_by_member = PRODUCTS.dense_from, PRODUCTS.dense_from_by_member

    arena = _arena(30, 64, 5)
    ra, rb = np.array([4, 9, 1, 22, 17]), np.array([0, 3, 29, 8, 8])
    w = np.random.default_rng(6).standard_normal((128, 16)).astype(np.float32)
    want = np.hstack([arena[ra], arena[rb]]) @ w
    panels = native.pack(w)
    real = native.load()
    got = {}
    for case in ("native", "declined", "over the rule", "no panels"):
        monkeypatch.undo()
        if case == "declined":

            class Declining:
                def __getattr__(self, name):
                    return getattr(real, name)

                sgemm = staticmethod(lambda *a: False)

            monkeypatch.setattr(native, "_module", Declining())
        elif case == "over the rule":
            monkeypatch.setattr(native, "_max_rows", 2)
        ws = np.full((5, 128), np.nan, np.float32)
        out = np.full((5, 16), np.nan, np.float32)
        p = None if case == "no panels" else panels
        got[case] = dense_from(((arena, ra), (arena, rb)), (128,), ws, w, p, out).copy()
        np.testing.assert_allclose(got[case], want, rtol=2e-5, atol=1e-4)
        if case != "native":  # the fallback gathered into the workspace
            np.testing.assert_array_equal(ws, np.hstack([arena[ra], arena[rb]]))
    segs = ((0, 2), (1, 3))
    wts = (w, w[::-1].copy())
    out = np.empty((5, 16), np.float32)
    pans = tuple(native.pack(x) for x in wts)
    dense_from_by_member(((arena, ra), (arena, rb)), (128,), None, wts, pans, segs, out)
    x = np.hstack([arena[ra], arena[rb]])
    np.testing.assert_allclose(out[:2], x[:2] @ wts[0], rtol=2e-5, atol=1e-4)
    np.testing.assert_allclose(out[2:], x[2:] @ wts[1], rtol=2e-5, atol=1e-4)
