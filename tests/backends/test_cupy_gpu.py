"""The CuPy backend on a real GPU (issue #6; skipped without CUDA by tests/conftest.py):
outputs equal the NumPy backend for every model and policy, both calling conventions
agree, and every kernel call gets a device time from CUDA events."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import acrobat
from acrobat.backends import get_backend
from tests.backends.helpers import (
    MODELS,
    every_op_instances,
    every_op_program,
    kernel_args,
    numpy_kernel,
    program,
)
from tests.runtime.helpers import ATOL, POLICIES, RTOL, assert_outputs_equal, batch

pytestmark = pytest.mark.gpu


def _assert_same(got: list, want: list, what: str) -> None:
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert acrobat.values_equal(g, w, rtol=RTOL, atol=ATOL), f"{what}: instance {i}"


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", MODELS)
def test_cupy_equals_numpy(model, policy):
    xs, _ = batch(model, 6, 2)
    prog = program(model)
    want = acrobat.run(prog, xs, policy=policy, backend="numpy").outputs
    got = acrobat.run(prog, xs, policy=policy, backend="cupy").outputs
    _assert_same(got, want, f"{model}/{policy}")


@pytest.mark.parametrize("model", MODELS)
def test_cupy_equals_numpy_at_small_size(model):
    prog = program(model, "small")
    xs = acrobat.models.load(model, "small").instances(8, 1)
    want = acrobat.run(prog, xs, backend="numpy").outputs
    _assert_same(acrobat.run(prog, xs, backend="cupy").outputs, want, f"{model} small")


def test_every_op_equals_reference():
    xs, refs = every_op_instances(5, 0)
    res = acrobat.run(every_op_program()[0], xs, backend="cupy")
    assert_outputs_equal(res.outputs, refs, "every op on the GPU")


@pytest.mark.parametrize("model", MODELS)
def test_fused_gather_equals_gathered_on_the_gpu(model):
    import cupy

    prog = program(model)
    backend = get_backend("cupy")
    for n, kernel in enumerate(prog.kernels.values()):
        fn, _ = backend.compile(kernel, prog.params)
        B = 7
        args = kernel_args(kernel, B, seed=n)
        want = numpy_kernel(prog, kernel)(B, *args.gathered)
        on_device = [
            (cupy.asarray(a[0]), a[1]) if isinstance(a, tuple) else cupy.asarray(a)
            for a in args.fused
        ]
        device_rows = [(a[0], cupy.asarray(a[1])) if isinstance(a, tuple) else a for a in on_device]
        gathered = [cupy.asarray(a) for a in args.gathered]
        for how, call in {
            "gathered": gathered,
            "fused, host rows": on_device,
            "fused, device rows": device_rows,
        }.items():
            for g, w in zip(fn(B, *call), want):
                np.testing.assert_allclose(
                    cupy.asnumpy(g), w, RTOL, ATOL, err_msg=f"{kernel.name} {how}"
                )


def test_every_kernel_call_gets_a_device_time():
    import cupy

    prog = program("treelstm")
    backend = get_backend("cupy")
    kernel = next(iter(prog.kernels.values()))
    fn, source = backend.compile(kernel, prog.params)
    args = [cupy.asarray(a) for a in kernel_args(kernel, 4, seed=0).gathered]
    fn(4, *args)
    fn(4, *args)
    times = backend.take_device_ms()
    assert len(times) == 2 and all(t >= 0 for t in times)
    assert backend.take_device_ms() == []
    assert 'extern "C" __global__' in source


def test_auto_picks_the_gpu_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_backend("auto").name == "cupy"
