"""The "add an op" recipe, followed: a new elementwise op is registered in ONE call and
then parses, type-checks, evaluates, runs batched on NumPy, runs as generated CUDA (on
the CPU, through the g++ emulation) and compiles to PTX with nvcc."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import acrobat
import acrobat.runtime.run as run_module
from acrobat.codegen.cuda_kernels import CUDA_RULES, plan_kernel
from acrobat.codegen.elementwise import define_elementwise_op, remove_op
from acrobat.codegen.numpy_kernels import NUMPY_RULES
from acrobat.compiler import op_flops
from acrobat.errors import AcrobatNameError, AcrobatTypeError
from acrobat.ir.nodes import OpCall
from acrobat.ir.ops import REGISTRY, OpKind
from acrobat.ir.traversal import walk
from acrobat.runtime.run import prepare
from tests.backends.emulation import GXX, EmulatedCudaBackend
from tests.backends.test_cuda_codegen import NVCC, _compile_to_ptx
from tests.runtime.helpers import assert_outputs_equal


def _softplus(x):
    return np.logaddexp(np.float32(0.0), x)


@pytest.fixture
def new_ops():
    """Three new ops, each defined in one call, removed again afterwards: ``softplus`` (a
    plain function), ``square`` (a ufunc: it writes into workspace buffers) and the
    broadcasting ``hypot``."""
    names = ("softplus", "square", "hypot")
    define_elementwise_op("softplus", numpy=_softplus, cuda="log1pf(expf({0}))")
    define_elementwise_op("square", numpy=np.square, cuda="({0} * {0})")
    define_elementwise_op("hypot", numpy=np.hypot, cuda="hypotf({0}, {1})", arity=2)
    yield names
    for name in names:
        remove_op(name)
    assert not set(names) & (set(REGISTRY) | set(NUMPY_RULES) | set(CUDA_RULES))


SOURCE = """
H = Size("H", 8)
W: Param[H, H]
b: Param[H]
s: Param[H]

def rnn(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            g = softplus(dense(x, W, b)) - square(h) * 0.25
            return rnn(rest, tanh(hypot(g, s) - square(g)))

def main(xs: List[Tensor[H]]) -> Tensor[H]:
    return rnn(xs, zeros(H))
"""


def _program():
    module = acrobat.parse(textwrap.dedent(SOURCE))
    params = acrobat.init_params(module, seed=0)
    rng = np.random.default_rng(1)
    xs = [
        acrobat.from_list(list(rng.standard_normal((n, 8)).astype(np.float32)))
        for n in (3, 1, 0, 5, 2)
    ]
    refs = [acrobat.evaluate(module, x, params) for x in xs]
    return acrobat.compile(module, params), xs, refs


def test_the_op_has_every_fact(new_ops):
    op = REGISTRY["softplus"]
    assert op.kind is OpKind.ELEMWISE and REGISTRY["hypot"].kind is OpKind.BROADCAST
    assert all(name in NUMPY_RULES and name in CUDA_RULES for name in new_ops)
    prog, _, _ = _program()
    calls = [e for k in prog.kernels.values() for e in walk(k.function.body)]
    softplus = [e for e in calls if isinstance(e, OpCall) and e.op == "softplus"]
    assert softplus and all(op_flops(e) == 8 for e in softplus)  # one per element of [8]


def test_runs_batched_on_numpy(new_ops):
    prog, xs, refs = _program()
    res = acrobat.run(prog, xs, backend="numpy")
    assert_outputs_equal(res.outputs, refs, "new ops on numpy")
    sources = "\n".join(prepare(prog, "numpy").sources.values())
    assert "_op_softplus(" in sources
    assert re.search(r"_op_square\(\w+, out=", sources)  # a ufunc writes into a buffer


@pytest.mark.skipif(GXX is None, reason="g++ is not installed")
def test_runs_as_generated_cuda(new_ops, tmp_path):
    """The CUDA rules' C, compiled for the host, gives the reference's outputs."""
    prog, xs, refs = _program()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module, "get_backend", lambda name: EmulatedCudaBackend(prog, tmp_path))
        runtime = run_module.Runtime(prog, "cuda-emulated")
    assert_outputs_equal(runtime.run(xs, "acrobat", "off", None).outputs, refs, "emulated")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_compiles_to_ptx(new_ops, tmp_path):
    prog, _, _ = _program()
    plans = [plan_kernel(k.function) for k in prog.kernels.values()]
    source = "\n".join(p.source for p in plans)
    assert "log1pf(expf(" in source and "hypotf(" in source
    _compile_to_ptx(plans, tmp_path)


def test_bad_definitions_are_typed_errors(new_ops):
    with pytest.raises(AcrobatNameError, match="already registered|registered twice"):
        define_elementwise_op("tanh", numpy=np.tanh, cuda="tanhf({0})")
    with pytest.raises(AcrobatNameError, match="not an identifier"):
        define_elementwise_op("soft plus", numpy=_softplus, cuda="x")
    with pytest.raises(AcrobatTypeError, match="template"):
        define_elementwise_op("cube", numpy=np.square, cuda="{0} * {1}")
    with pytest.raises(AcrobatTypeError, match="1 or 2"):
        define_elementwise_op("fma", numpy=np.add, cuda="{0}", arity=3)
    assert not {"cube", "fma", "soft plus"} & set(REGISTRY)


@pytest.mark.gpu
def test_runs_on_a_gpu(new_ops):
    prog, xs, refs = _program()
    assert_outputs_equal(acrobat.run(prog, xs, backend="cupy").outputs, refs, "new ops on cupy")
