"""The native products' two instruction sets: AVX-512 tiles (12 rows of 16 columns a
vector) where the CPU has them, AVX2 tiles (6 rows) elsewhere. Every output element is the
same chain of FMAs in both, so they must give the same bits, for every shape, layout,
bias, twin segmentation and thread count; ``isa()`` says which runs and switches."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import acrobat
from acrobat import native
from tests.runtime.helpers import batch, program

MOD = native.load()


def _cpu_has_avx512() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


needs_both = pytest.mark.skipif(
    MOD is None or not _cpu_has_avx512(), reason="needs the native module on an AVX-512 CPU"
)


@pytest.fixture
def restore_isa():
    before = MOD.isa() if MOD is not None else None
    yield
    if before:
        MOD.isa(before)


def _both(call):
    """``call()``'s results under AVX2 and under AVX-512."""
    MOD.isa("avx2")
    a = call()
    MOD.isa("avx512")
    return a, call()


@pytest.mark.skipif(MOD is None, reason="native module off")
def test_isa_says_what_runs_and_refuses_what_the_cpu_lacks(restore_isa):
    assert MOD.isa() == ("avx512" if _cpu_has_avx512() else "avx2")
    assert MOD.isa("avx2") == "avx2" and MOD.isa() == "avx2"
    with pytest.raises(ValueError, match="avx2"):
        MOD.isa("sse2")
    if not _cpu_has_avx512():
        with pytest.raises(ValueError):
            MOD.isa("avx512")


@pytest.mark.skipif(MOD is None, reason="native module off")
def test_acrobat_native_isa_avx2_keeps_a_process_on_avx2():
    code = "from acrobat import native; print(native.load().isa())"
    env = {**os.environ, "ACROBAT_NATIVE_ISA": "avx2"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "avx2"


@needs_both
@pytest.mark.parametrize("n", [8, 16, 24, 40, 256])
@pytest.mark.parametrize("m", [1, 5, 8, 11, 12, 13, 24, 25, 37, 64, 100])
@pytest.mark.parametrize("k", [0, 1, 7, 300])
def test_avx512_and_avx2_products_are_the_same_bits(m, n, k, restore_isa):
    rng = np.random.default_rng(m * 100 + n + k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    panels = native.pack(rng.standard_normal((k, n)).astype(np.float32))
    bias = rng.standard_normal(n).astype(np.float32)
    for b in (None, bias):
        for threads in (1, 2):

            def product(b=b, threads=threads):
                out = np.full((m + 2, n + 8), np.nan, np.float32)  # strided, a margin kept
                assert MOD.sgemm(x, panels, out[1 : m + 1, 4 : n + 4], b, threads) is True
                return out

            two, wide = _both(product)
            np.testing.assert_array_equal(two, wide)  # the margin untouched in both


@needs_both
@pytest.mark.parametrize("m", [3, 13, 40])
def test_avx512_and_avx2_agree_on_rows_read_in_place_and_twin_rows(m, restore_isa):
    rng = np.random.default_rng(m)
    buf = rng.standard_normal((3 * m + 5, 40)).astype(np.float32)
    rows_a, rows_b = rng.integers(0, len(buf), m), rng.integers(0, len(buf), m)
    panels = native.pack(rng.standard_normal((80, 48)).astype(np.float32))
    parts = ((buf, rows_a), (buf, rows_b))

    def gathered():
        out = np.empty((m, 48), np.float32)
        assert MOD.sgemm(parts, panels, out, None) is True
        return out

    np.testing.assert_array_equal(*_both(gathered))
    wts = tuple(native.pack(rng.standard_normal((80, 48)).astype(np.float32)) for _ in range(2))
    biases = tuple(rng.standard_normal(48).astype(np.float32) for _ in range(2))
    segs = ((0, m // 2), (1, m - m // 2))

    def twins():
        out = np.empty((m, 48), np.float32)
        assert MOD.sgemm_segs(parts, wts, out, biases, segs, 2) is True
        return out

    np.testing.assert_array_equal(*_both(twins))


@needs_both
@pytest.mark.parametrize("model", ["birnn", "treelstm", "stackrnn"])
def test_model_outputs_are_the_same_bits_under_both(model, restore_isa):
    xs, _ = batch(model, 8, 0)
    prog = program(model)

    def run():
        return acrobat.run(prog, xs, strategy="batched", threads=1).outputs

    two, wide = _both(run)
    for i, (a, b) in enumerate(zip(two, wide)):
        assert acrobat.values_equal(a, b, rtol=0, atol=0), f"instance {i}"
