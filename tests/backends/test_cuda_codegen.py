"""CUDA code generation (issue #6): every kernel of every model and size compiles to PTX,
and plans have the promised shape: gather-fused reads, one launch per elementwise chain,
cuBLAS for products, reductions that inline their producers. No GPU or CuPy needed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import acrobat
from acrobat.codegen.cuda_kernels import Gemm, Launch, plan_kernel, ravel, unravel
from tests.backends.helpers import MODELS, SIZES, every_op_program, plans

NVCC = shutil.which("nvcc")
# compute_80: PTX any GPU from Ampere on (the H100/H200 included) JIT-compiles
NVCC_FLAGS = ("-ptx", "-std=c++17", "-arch=compute_80", "--Werror", "all-warnings")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("model", MODELS)
def test_every_kernel_compiles_to_ptx(model, size, tmp_path):
    """All distinct RawKernel sources of a model, as ONE translation unit, one nvcc run."""
    _compile_to_ptx(plans(model, size), tmp_path)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_every_op_compiles_to_ptx(tmp_path):
    prog = every_op_program()[0]
    _compile_to_ptx([plan_kernel(k.function) for k in prog.kernels.values()], tmp_path)


def _compile_to_ptx(plans_, tmp_path) -> None:
    launches = {s.source: s.name for p in plans_ for s in p.launches}
    cu, ptx = tmp_path / "kernels.cu", tmp_path / "kernels.ptx"
    cu.write_text("\n".join(launches))
    cmd = [NVCC, *NVCC_FLAGS, "-o", str(ptx), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    entries = set(re.findall(r"\.entry (\w+)\(", ptx.read_text()))
    assert entries == set(launches.values())


def _plan(model: str, kernel: str):
    return next(p for p in plans(model, "tiny") if p.kernel == kernel)


def test_lstm_cell_is_one_gemm_between_two_fused_launches():
    """concat -> dense -> the whole gate chain: the bias add and both outputs in ONE launch,
    reading the cell states through their index arrays (no gather copy)."""
    plan = _plan("treelstm", "cell_node1")
    assert [type(s) for s in plan.steps] == [Launch, Gemm, Launch]
    last = plan.steps[-1]
    assert [k for k, _ in last.outputs] == [k for k, _ in plan.outputs]
    assert ("weight", "$b_U") in last.inputs and ("param", "%cl") in last.inputs
    assert re.search(r"p\d+_cl\[i\d+_cl\[b\] \* 8 \+ i\]", last.source)


def test_reductions_read_their_producers_through_indices():
    """layer_norm(add(x, t)) is one reduction launch reading x and t through indices."""
    first = _plan("berxit", "encoder_layer_node0").steps[0]
    assert first.kind == "reduction"
    assert {("param", "%x"), ("param", "%t_1")} <= set(first.inputs)


def test_embed_is_a_gather_by_host_id():
    (step,) = _plan("birnn", "word_k0").steps
    assert step.inputs == (("host", "%w"), ("weight", "$E"))
    assert re.search(r"w\d+_E\[h\d+_w\[b\] \* 8 \+ i\]", step.source)


def test_products_of_kernel_outputs_are_returned_without_a_copy():
    s = acrobat.models.load("stackrnn", "tiny")  # without tables, parse_node1 ends in a GEMM
    prog = acrobat.compile(s.module, s.params, acrobat.CompileOptions().without("embedding_tables"))
    plan = plan_kernel(prog.kernels["parse_node1"].function)
    assert isinstance(plan.steps[-1], Gemm) and plan.steps[-1].out == plan.outputs[0][0]


def test_code_generation_needs_neither_cupy_nor_a_gpu():
    code = (
        "import sys; sys.modules['cupy'] = None\n"
        "import acrobat.backends.cupy_backend\n"
        "from tests.backends.helpers import plans\n"
        "assert plans('berxit', 'tiny')[0].source\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=root)


shapes = st.lists(st.integers(1, 5), min_size=0, max_size=4).map(tuple)


@given(shape=shapes, data=st.data())
def test_index_expressions_unravel_and_ravel_like_numpy(shape, data):
    """The C index arithmetic (non-negative ints: C ``/`` is Python ``//``) round-trips."""
    import numpy as np

    size = int(np.prod(shape))
    flat = data.draw(st.integers(0, size - 1))
    coords = [eval(c.replace("/", "//"), {"i": flat}) for c in unravel("i", shape)]
    assert tuple(coords) == tuple(int(c) for c in np.unravel_index(flat, shape))
    back = ravel([str(c) for c in coords], shape)
    assert eval(back.replace("/", "//")) == flat
