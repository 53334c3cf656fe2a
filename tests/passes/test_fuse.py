"""FuseOps: op chains become kernels; groups split at opaque ops, host reads, depth class."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.compiler import default_passes
from acrobat.ir.nodes import OpCall
from acrobat.ir.ops import REGISTRY
from acrobat.ir.traversal import walk
from acrobat.ir.values import from_list
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.anf import ToANF
from acrobat.passes.fuse import FUSABLE, FuseOps
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, kernel_calls, run, vec

HEAD = """
H = Size("H", 4)
W: Param[3 * H, H]
b: Param[3 * H]
U: Param[H, H]
"""

CELL = (
    HEAD
    + """
def main(x: Tensor[H], c: Tensor[H]) -> tuple[Tensor[H], Tensor[H]]:
    i, o, u = split(dense(x, W, b), 3)
    c2 = sigmoid(i) * tanh(u) + c
    h = sigmoid(o) * tanh(dense(c2, U))
    return h, c2
"""
)

DECIDE = (
    HEAD
    + """
def main(x: Tensor[H]) -> Tensor[H]:
    p = sigmoid(dense(x, U))
    if item(p[0:1]) > 0.5:
        return tanh(p)
    return p * x
"""
)

# y only depends on the list's elements (a static depth); y * h on the recursion
RNN = (
    HEAD
    + """
def rnn(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            y = tanh(x)
            return rnn(rest, y * h)

def main(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    return rnn(xs, h)
"""
)

TWICE = (
    HEAD
    + """
def f(a: Tensor[H]) -> Tensor[H]:
    return tanh(dense(a, U))

def main(x: Tensor[H]) -> Tensor[H]:
    a = tanh(dense(x, U))
    return f(a) + a
"""
)


def prepare(src):
    m = acrobat.parse(src)
    params = acrobat.init_params(m)
    anf, _ = run([ToANF()], m, params)
    return anf, params


def kernel_ops(m, name):
    return [b.value.op for b in m.function_map[name].body.bindings if isinstance(b.value, OpCall)]


def test_chain_fuses_into_anchored_groups():
    m, params = prepare(CELL)
    rng = np.random.default_rng(0)
    xs = [(vec(rng, 4), vec(rng, 4)) for _ in range(3)]
    out, ctx = check_pass(FuseOps(), m, params, xs, case="cell")
    # dense anchors the first group; the second dense (opaque) starts another
    assert kernel_ops(out, "main_k0") == [
        "dense", "split", "sigmoid", "tanh", "mul", "add", "sigmoid"
    ]  # fmt: skip
    assert kernel_ops(out, "main_k1") == ["dense", "tanh", "mul"]
    assert [k.kernel for k in kernel_calls(out, "main")] == ["main_k0", "main_k1"]
    assert ctx.notes["FuseOps"] == ["2 op group(s) -> 2 distinct kernel(s)"]


def test_host_read_stays_on_the_host():
    m, params = prepare(DECIDE)
    rng = np.random.default_rng(1)
    out, _ = check_pass(FuseOps(), m, params, [vec(rng, 4) for _ in range(6)], case="decide")
    main = out.function_map["main"]
    host = [e.op for e in walk(main.body) if isinstance(e, OpCall)]
    assert host == ["item", "h.gt"]
    # sigmoid, slice fused with the dense; the item() closes the group
    first = kernel_calls(out, "main")[0].kernel
    assert kernel_ops(out, first) == ["dense", "sigmoid", "slice"]


def test_static_and_dynamic_ops_never_share_a_kernel():
    m, params = prepare(RNN)
    rng = np.random.default_rng(2)
    xs = [(from_list([vec(rng, 4) for _ in range(k)]), vec(rng, 4)) for k in (0, 3)]
    out, _ = check_pass(FuseOps(), m, params, xs, case="rnn_split")
    assert [kernel_ops(out, k.kernel) for k in kernel_calls(out, "rnn")] == [["tanh"], ["mul"]]
    # without hoisting there is nothing to keep apart
    off, _ = run([FuseOps()], m, params, CompileOptions(hoisting=False))
    assert [kernel_ops(off, k.kernel) for k in kernel_calls(off, "rnn")] == [["tanh", "mul"]]


def test_identical_groups_share_one_kernel():
    m, params = prepare(TWICE)
    rng = np.random.default_rng(3)
    out, _ = check_pass(FuseOps(), m, params, [vec(rng, 4)], case="shared")
    assert [k.kernel for k in kernel_calls(out, "f")] == ["f_k0"]
    assert [k.kernel for k in kernel_calls(out, "main")] == ["f_k0", "main_k0"]


def test_fusion_off_gives_one_kernel_per_op():
    m, params = prepare(CELL)
    rng = np.random.default_rng(4)
    xs = [(vec(rng, 4), vec(rng, 4))]
    out, _ = check_pass(FuseOps(), m, params, xs, options=CompileOptions(fusion=False))
    kernels = [f for f in out.functions if f.is_kernel]
    assert all(len(kernel_ops(out, k.name)) == 1 for k in kernels)
    assert len(kernel_calls(out, "main")) == 10


def test_kernel_names_avoid_user_functions():
    src = (
        HEAD
        + """
def main(x: Tensor[H]) -> Tensor[H]:
    return main_k0(tanh(x))

def main_k0(x: Tensor[H]) -> Tensor[H]:
    return sigmoid(x)
"""
    )
    m, params = prepare(src)
    out, _ = run([FuseOps()], m, params)
    assert [k.kernel for k in kernel_calls(out, "main")] == ["main_k1"]
    assert not out.function_map["main_k0"].is_kernel


@pytest.mark.parametrize("name", MODEL_NAMES + VARIANTS)
def test_every_tensor_op_is_in_a_kernel(name):
    spec = acrobat.models.load(name, "tiny")
    passes = default_passes()
    upto = [p.name for p in passes].index("FuseOps") + 1
    out, _ = run(passes[:upto], spec.module, spec.params)
    for f in out.functions:
        if f.is_kernel:
            continue
        for e in walk(f.body):
            if isinstance(e, OpCall):
                assert REGISTRY[e.op].kind not in FUSABLE, (f.name, e.op)
