"""The NumPy kernels' two calling conventions agree: gathered ``[B, ...]`` arrays, and
``(arena buffer, rows)`` pairs writing into ``out`` views (rows contiguous or not; one
tensor class concatenated by one take of interleaved rows, or not)."""

import math

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.codegen.numpy_kernels import _gather_cat, compile_numpy_kernel
from acrobat.ir.types import TensorType
from acrobat.runtime.run import prepare

MODELS = ["mvrnn", "treelstm", "birnn", "berxit", "drnn", "stackrnn"]


def _kernels(model):
    spec = acrobat.models.load(model, "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    return prog, list(prog.kernels.values())


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_fused_convention_equals_gathered(model, contiguous):
    prog, kernels = _kernels(model)
    rng = np.random.default_rng(0)
    B = 5
    checked = 0
    for k in kernels:
        fn = compile_numpy_kernel(k.function, prog.params).fn
        gathered, fused = [], []
        for p in k.function.params:
            if isinstance(p.ty, TensorType):
                width = max(1, math.prod(p.ty.shape))
                buf = rng.uniform(-1, 1, (3 * B + 4, width)).astype(p.ty.dtype)
                rows = np.arange(2, 2 + B) if contiguous else rng.permutation(3 * B + 4)[:B]
                gathered.append(buf[rows].reshape((B,) + tuple(p.ty.shape)))
                fused.append((buf, rows))
            else:  # host ints (ids, counts): small valid values
                col = rng.integers(0, 2, B)
                gathered.append(col)
                fused.append(col)
        try:
            want = fn(B, *gathered)
        except Exception:  # a kernel whose host ints must mean more (skip it)
            continue
        want = [np.array(w) for w in want]
        outs = [np.full_like(w, np.nan) for w in want]
        assert fn(B, *fused, out=outs) is None
        for w, o in zip(want, outs):
            np.testing.assert_allclose(o, w, rtol=1e-6, atol=1e-6)
        checked += 1
    assert checked >= len(kernels) // 2


def test_gather_cat_of_one_arena_is_one_take_and_mixed_falls_back():
    rng = np.random.default_rng(1)
    buf = rng.standard_normal((10, 6)).astype(np.float32)
    ra, rb = np.array([7, 1, 4]), np.array([0, 9, 2])
    want = np.concatenate([buf[ra], buf[rb]], axis=1).reshape(3, 4, 3)
    ws = np.empty((3, 4, 3), np.float32)
    np.testing.assert_array_equal(_gather_cat(((buf, ra), (buf, rb)), (4, 3), ws), want)
    mixed = ((buf, ra), buf[rb].reshape(3, 2, 3))  # a gathered array among pairs
    np.testing.assert_array_equal(_gather_cat(mixed, (4, 3), np.empty_like(ws)), want)
    other = buf.copy()  # the same rows of another arena
    got = _gather_cat(((buf, ra), (other, rb)), (4, 3), np.empty_like(ws))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("model", ["treelstm", "mvrnn"])
def test_bytes_gathered_are_counted_the_same_in_both_conventions(model, monkeypatch):
    """The NumPy backend runs the fused convention: scattered rows its kernels copy count
    as gathered bytes, exactly as when the executor gathers them (unfused convention)."""
    from acrobat.backends.numpy_backend import NumpyBackend
    from tests.runtime.helpers import assert_outputs_equal, batch

    xs, refs = batch(model, 6, 0)
    spec = acrobat.models.load(model, "tiny")
    fused = acrobat.run(acrobat.compile(spec.module, spec.params), xs, strategy="batched")
    monkeypatch.setattr(NumpyBackend, "fused_gather", False)
    plain = acrobat.run(acrobat.compile(spec.module, spec.params), xs, strategy="batched")
    assert_outputs_equal(fused.outputs, refs, f"{model} fused")
    assert_outputs_equal(plain.outputs, refs, f"{model} gathered")
    assert fused.stats["bytes_gathered"] == plain.stats["bytes_gathered"] > 0


@pytest.mark.parametrize("n", [1, 2, 5, 256, 257, 1000])
def test_block_start_finds_one_block_and_only_one_block(n):
    """The one test of "these rows are one block" (kernels, CuPy backend, arenas)."""
    from acrobat.codegen.numpy_kernels import block_start

    rows = np.arange(7, 7 + n, dtype=np.int64)
    assert block_start(rows) == 7
    if n >= 2:
        gap = rows.copy()
        gap[-1] += 1  # ends n apart
        assert block_start(gap) is None
    if n >= 4:
        swapped = rows.copy()
        swapped[[1, 2]] = swapped[[2, 1]]  # the right span, not in order
        assert block_start(swapped) is None


# -- arguments read in place by their one reader (the native product or fused chain) -----

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"no native kernel: {native.status()}"
)

READ_TWICE = """
H = Size("H", 16)
W: Param[H, H]
U: Param[H, 2 * H]
b: Param[H]

def twice(h: Tensor[H]) -> Tensor[H]:
    return tanh(dense(h, W) + h)

def pair(a: Tensor[H], c: Tensor[H]) -> Tensor[H]:
    return dense(concat(a, c), U, b) * a

def main(x: Tensor[H], y: Tensor[H]) -> Tensor[H]:
    return pair(twice(x), twice(y))
"""
# x, y: read by a product and a chain each; a: by the concat and the multiply


def _sources(model):
    spec = acrobat.models.load(model, "tiny")
    return prepare(acrobat.compile(spec.module, spec.params), "numpy").sources


@needs_native
def test_an_argument_read_once_reaches_its_reader_ungathered():
    cell = _sources("treelstm")["cell_node1"]
    # the children's states: one product over concat(h_l, h_r) reading both in place ...
    assert "_dense_from((x_hl, x_hr, ), (" in cell and "_gather_cat(" not in cell
    # ... and their memory cells read in place by the fused gates: gathered only in the
    # fallback (under the native call's `if not`, one level deeper)
    prologue = cell.split("_rowprog(")[0]
    assert "_gather(x_cl" not in prologue and "        x_cl = _gather(x_cl, " in cell
    group = _sources("birnn")["rnn_k1+rnn_dup1_k1"]
    assert "_gdense_from((x_h, ), (" in group  # a twin group's product too
    assert "\n    x_h = _gather(" not in group


@needs_native
def test_an_argument_read_twice_is_gathered_once_in_the_prologue():
    m = acrobat.parse(READ_TWICE)
    rng = np.random.default_rng(0)
    params = {
        "W": rng.standard_normal((16, 16)).astype(np.float32),
        "U": rng.standard_normal((16, 32)).astype(np.float32),
        "b": rng.standard_normal(16).astype(np.float32),
    }
    prog = acrobat.compile(m, params)
    src = prepare(prog, "numpy").sources
    pair = next(s for k, s in src.items() if k.startswith("pair"))
    assert "_gather_cat((x_a, x_c, ), (32,)" in pair and "_dense_from" not in pair
    main = next(s for k, s in src.items() if k.startswith("main"))
    assert "    x_x = _gather(x_x, (16,)" in main and "_dense_rows(x_x, " in main
    xs = [tuple(rng.standard_normal(16).astype(np.float32) for _ in range(2)) for _ in range(7)]
    got = acrobat.run(prog, xs, strategy="batched").outputs
    for g, x in zip(got, xs):
        assert acrobat.values_equal(g, acrobat.evaluate(m, x, params), rtol=1e-5, atol=1e-5)


@needs_native
@pytest.mark.parametrize("model", ["treelstm", "birnn", "stackrnn", "drnn", "nestedrnn"])
def test_products_the_native_kernel_declines_gather_first_and_agree(model, monkeypatch):
    from tests.runtime.helpers import ATOL, RTOL, batch

    spec = acrobat.models.load(model, "tiny")
    xs, _ = batch(model, 6, 2)
    want = [spec.evaluate(x) for x in xs]
    real = native.load()

    class DecliningProducts:  # every product with rows read in place answers "not mine"
        @staticmethod
        def sgemm(x, *rest):
            return False if isinstance(x, tuple) else real.sgemm(x, *rest)

        @staticmethod
        def sgemm_segs(x, *rest):
            return False if isinstance(x, tuple) else real.sgemm_segs(x, *rest)

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setattr(native, "_module", DecliningProducts())
    prog = acrobat.compile(spec.module, spec.params)
    assert any("_dense_from(" in s for s in prepare(prog, "numpy").sources.values())
    for got, w in zip(acrobat.run(prog, xs, strategy="batched").outputs, want):
        assert acrobat.values_equal(got, w, rtol=RTOL, atol=ATOL)
