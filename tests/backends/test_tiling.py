"""Large launches in row tiles (acrobat.backends.tiling): which kernels are tiled, and a
tiled launch writes exactly what the untiled one writes."""

import math

import numpy as np
import pytest

import acrobat
from acrobat.backends import tiling
from acrobat.backends.numpy_backend import NumpyBackend
from acrobat.codegen.numpy_kernels import compile_numpy_kernel
from acrobat.ir.types import TensorType


def _prog(model, size="tiny"):
    spec = acrobat.models.load(model, size)
    return spec, acrobat.compile(spec.module, spec.params)


def _weights(prog, k):
    return sum(prog.params[w].nbytes for w in k.weights)


def test_activation_bound_kernels_are_tiled_weight_bound_ones_are_not():
    _, prog = _prog("berxit", "small")
    layer = prog.kernels["encoder_layer_node0"]
    # ~8 MB per instance of temporaries (FFN 4D wide, attention scores): a few rows a tile
    assert tiling.row_bytes(layer.function) > 4 << 20
    assert tiling.tile_rows(layer.function, _weights(prog, layer)) <= 4
    _, prog = _prog("treelstm", "small")
    for k in prog.kernels.values():  # GEMMs over large weights: one call takes any batch
        assert tiling.tile_rows(k.function, _weights(prog, k)) is None


def test_tile_rows_follows_the_budget():
    _, prog = _prog("mvrnn", "small")
    k = prog.kernels["compose_node1"]
    per_row = tiling.row_bytes(k.function)
    assert tiling.tile_rows(k.function, 0, budget=10 * per_row) == 10
    assert tiling.tile_rows(k.function, 0, budget=per_row // 2) == 1
    assert tiling.tile_rows(k.function, 0, budget=per_row * tiling.UNTILED_ROWS) is None
    assert tiling.tile_rows(k.function, 9 * per_row, budget=10 * per_row) is None


@pytest.mark.parametrize("model", ["mvrnn", "berxit", "birnn"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_a_tiled_call_writes_what_one_call_writes(model, contiguous):
    _, prog = _prog(model)
    rng = np.random.default_rng(1)
    B = 7
    checked = 0
    for k in prog.kernels.values():
        fn = compile_numpy_kernel(k.function, prog.params).fn
        args = []
        for p in k.function.params:
            if isinstance(p.ty, TensorType):
                width = max(1, math.prod(p.ty.shape))
                buf = rng.uniform(-1, 1, (3 * B, width)).astype(p.ty.dtype)
                rows = np.arange(3, 3 + B) if contiguous else rng.permutation(3 * B)[:B]
                args.append((buf, rows))
            else:
                args.append(rng.integers(0, 2, B))
        shapes = [(B, *t.shape) for t in k.outputs]
        whole = [np.full(s, np.nan, np.float32) for s in shapes]
        try:
            fn(B, *args, out=whole)
        except Exception:  # a kernel whose host ints must mean more (skip it)
            continue
        for rows in (1, 2, 3, B):
            tiles = [np.full(s, np.nan, np.float32) for s in shapes]
            assert tiling.tiled(fn, rows)(B, *args, out=tiles) is None
            for w, t in zip(whole, tiles):
                # equal up to the BLAS's summation order, which may change with the row
                # count (OpenBLAS's kernels for a few rows differ on some CPUs)
                np.testing.assert_allclose(t, w, rtol=1e-6, atol=1e-7)
        checked += 1
    assert checked >= len(prog.kernels) // 2


@pytest.mark.parametrize("model", ["berxit", "mvrnn", "treelstm"])
def test_runs_with_every_kernel_tiled_equal_the_reference(model, monkeypatch):
    spec, prog = _prog(model)
    xs = spec.instances(6, 0)
    want = acrobat.run(prog, xs, strategy="batched").outputs
    # a budget of one byte: every kernel that may be tiled runs one row per call
    monkeypatch.setattr(tiling, "TILE_BYTES", 1)
    monkeypatch.setattr(tiling.tile_rows, "__defaults__", (0, 1))
    monkeypatch.setattr(tiling, "WEIGHT_RATIO", 1 << 40)
    prog2 = acrobat.compile(spec.module, spec.params)
    res = acrobat.run(prog2, xs, strategy="batched")
    src = "".join(e.source for e in res.trace.events if type(e).__name__ == "KernelCompiled")
    assert "called in tiles of 1 rows" in src
    for x, got, ref in zip(xs, res.outputs, want):
        assert acrobat.values_equal(got, ref, rtol=1e-6, atol=1e-7), x  # (BLAS order)
        assert acrobat.values_equal(
            got, acrobat.evaluate(spec.module, x, spec.params), rtol=1e-4, atol=1e-5
        )


def test_the_backend_says_which_kernels_it_tiles():
    _, prog = _prog("berxit", "small")
    fn, src = NumpyBackend().compile(prog.kernels["encoder_layer_node0"], prog.params)
    assert fn.rows <= 4 and src.startswith(f"# launches of more than {fn.rows} rows")
    _, small = _prog("treelstm", "small")
    fn, src = NumpyBackend().compile(next(iter(small.kernels.values())), small.params)
    assert not hasattr(fn, "rows") and not src.startswith("#")


def test_a_tiled_launch_stops_between_tiles_once_its_run_is_cancelled():
    """A long launch (Berxit's attention at b256: 256 tiles, seconds) reads its runtime's
    cancel slot between tiles: the tile under way finishes, no other starts."""
    from acrobat.backends.tiling import CancelSlot, tiled
    from acrobat.errors import RunCancelled

    slot, calls = CancelSlot(), []

    def kernel(n, x, out):
        calls.append(n)
        out[0][...] = x
        if slot.flag is not None:
            slot.flag[0] = 1  # cancelled while the first tile runs

    slot.flag = bytearray(1)
    x = np.ones((10, 3), np.float32)
    out = np.zeros_like(x)
    with pytest.raises(RunCancelled):
        tiled(kernel, 4, slot)(10, x, out=[out])
    assert calls == [4]
    slot.flag = None  # no run, or a run without a token: every tile runs
    calls.clear()
    tiled(kernel, 4, slot)(10, x, out=[out])
    assert calls == [4, 4, 2]
