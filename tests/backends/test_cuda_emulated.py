"""What the generated CUDA computes, checked on the CPU (see ``emulation.py``): every
model under every policy gives the reference interpreter's outputs, and a kernel gives
the same result whether it gathers, reads through indices (fused) or writes into ``out``."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import acrobat
import acrobat.runtime.run as run_module
from acrobat.backends.cupy_backend import CupyBackend
from acrobat.codegen.cuda_kernels import plan_kernel
from tests.backends.emulation import GXX, EmulatedCudaBackend, FakeCupy, host_library
from tests.backends.helpers import (
    MODELS,
    every_op_instances,
    every_op_program,
    kernel_args,
    numpy_kernel,
    program,
)
from tests.runtime.helpers import ATOL, POLICIES, RTOL, assert_outputs_equal, batch

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is not installed")


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    """model -> its emulated backend (kernels compiled once per model)."""
    workdir = tmp_path_factory.mktemp("cuda-emulated")
    cache: dict[str, EmulatedCudaBackend] = {}

    def get(model: str) -> EmulatedCudaBackend:
        if model not in cache:
            cache[model] = EmulatedCudaBackend(program(model), workdir)
        return cache[model]

    return get


@pytest.fixture(scope="module")
def runtimes(backends):
    cache: dict[str, run_module.Runtime] = {}

    def get(model: str) -> run_module.Runtime:
        if model not in cache:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(run_module, "get_backend", lambda name: backends(model))
                cache[model] = run_module.Runtime(program(model), "cuda-emulated")
        return cache[model]

    return get


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("n", "seed"), [(1, 0), (6, 2)])
def test_emulated_cuda_equals_reference(model, policy, n, seed, runtimes):
    xs, refs = batch(model, n, seed)
    res = runtimes(model).run(xs, policy, "off", None)
    assert_outputs_equal(res.outputs, refs, f"{model}/{policy} on emulated CUDA")


def test_every_op_equals_reference(tmp_path):
    """The ops and layouts no model uses (1-d matmuls, axis reductions, concat on axis 1)."""
    prog = every_op_program()[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module, "get_backend", lambda name: EmulatedCudaBackend(prog, tmp_path))
        runtime = run_module.Runtime(prog, "cuda-emulated")
    xs, refs = every_op_instances(5, 0)
    assert_outputs_equal(runtime.run(xs, "acrobat", "off", None).outputs, refs, "every op")


@pytest.mark.parametrize("contiguous", [False, True], ids=["scattered", "contiguous"])
@pytest.mark.parametrize("model", MODELS)
def test_fused_gather_equals_gathered_and_numpy(model, contiguous, backends):
    """Both calling conventions, and ``out=`` views, against the NumPy kernel."""
    prog = program(model)
    backend = backends(model)
    for n, kernel in enumerate(prog.kernels.values()):
        fn, _ = backend.compile(kernel, prog.params)
        B = 5
        args = kernel_args(kernel, B, seed=n, contiguous=contiguous)
        want = numpy_kernel(prog, kernel)(B, *args.gathered)
        views = [np.full((B,) + tuple(t.shape), np.nan, np.float32) for t in kernel.outputs]
        results = {
            "gathered": fn(B, *args.gathered),
            "fused": fn(B, *args.fused),
            "out=": fn(B, *args.fused, out=views),
        }
        for how, got in results.items():
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, RTOL, ATOL, err_msg=f"{kernel.name} {how}")
        for v, w in zip(views, want):
            np.testing.assert_allclose(v, w, RTOL, ATOL, err_msg=f"{kernel.name} out views")


@pytest.mark.parametrize("model", ["treelstm", "berxit"])
def test_cupy_backend_runs_end_to_end_on_a_stand_in_cupy(model, monkeypatch, tmp_path):
    """The real CupyBackend (probe, compile cache, resident weights, one upload of the
    index arrays, launch configuration, event timing) on FakeCupy."""
    prog = program(model)
    fake = FakeCupy(host_library(backend_plans(prog), tmp_path))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    runtime = run_module.Runtime(prog, "cupy")
    backend = runtime.backend
    assert isinstance(backend, CupyBackend) and backend.xp is fake
    xs, refs = batch(model, 6, 2)
    assert_outputs_equal(runtime.run(xs, "acrobat", "off", None).outputs, refs, model)
    launches = sum(len(p.launches) for p in backend_plans(prog))
    assert len(fake.compiled) == len(set(fake.compiled)) == launches
    for _, (grid,), (block,) in fake.launched:
        assert grid >= 1 and block & (block - 1) == 0 and block <= 256
    backend.take_device_ms()
    kernel = next(iter(prog.kernels.values()))
    fn, _ = backend.compile(kernel, prog.params)
    fn(3, *kernel_args(kernel, 3, seed=0).fused)
    assert backend.take_device_ms() == [0.5] and backend.take_device_ms() == []


@pytest.mark.parametrize("word", [-1, 50, 10**6])
def test_out_of_vocabulary_word_names_the_instance(word, runtimes):
    """Ids are checked before any launch: a GPU would read outside the table silently."""
    xs, _ = batch("treelstm", 3, 0)
    bad = acrobat.AdtValue("Node", (xs[1], acrobat.AdtValue("Leaf", (word,))))
    with pytest.raises(acrobat.InstanceError) as err:
        runtimes("treelstm").run([xs[0], bad, xs[2]], "acrobat", "off", None)
    assert err.value.index == 1


def backend_plans(prog):
    return [plan_kernel(k.function) for k in prog.kernels.values()]


def test_list_reductions_equal_reference(tmp_path, monkeypatch):
    """``sum``/``max``/``attend`` of Lists: the segmented launches on the backend's arrays."""
    from tests.frontend.test_list_reductions import REDUCE, _instance

    m = acrobat.parse(REDUCE)
    params = acrobat.init_params(m, 0)
    prog = acrobat.compile(m, params)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module, "get_backend", lambda name: EmulatedCudaBackend(prog, tmp_path))
        runtime = run_module.Runtime(prog, "cuda-emulated")
    from acrobat.runtime import segments

    # past the budget (made small here) one list of 40 does not pad two of 1 to 40: two groups
    monkeypatch.setattr(segments, "PAD_BUDGET", 64)
    assert len(segments._groups(np.array([1, 1, 40]), 4)) == 2
    assert len(segments._groups(np.array([1, 3, 2]), 4)) == 1
    for lengths in ((1, 3, 12, 2), (1, 1, 40)):
        xs = [_instance(n) for n in lengths]
        refs = [acrobat.evaluate(m, x, params) for x in xs]
        for policy in POLICIES:
            res = runtime.run(xs, policy, "off", None)
            assert_outputs_equal(res.outputs, refs, f"list reductions/{policy} on emulated CUDA")
