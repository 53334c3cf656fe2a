"""SpecializeWeights: one clone per weight context; weight parameters become ``$W``."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.ir.nodes import FnCall, Map
from acrobat.ir.traversal import walk
from acrobat.ir.values import from_list
from acrobat.passes.anf import ToANF
from acrobat.passes.dce import EliminateDeadCode
from acrobat.passes.inline import InlineSmallFunctions
from acrobat.passes.options import CompileOptions
from acrobat.passes.specialize import SpecializeWeights
from tests.passes.helpers import check_pass, run, vec, weights_read

SRC = """
H = Size("H", 4)
W1: Param[H, H]
W2: Param[H, H]
b1: Param[H]
b2: Param[H]

def cell(x: Tensor[H], wb: tuple[Tensor[H, H], Tensor[H]]) -> Tensor[H]:
    W, b = wb
    return tanh(dense(x, W, b))

def apply(x: Tensor[H], W: Tensor[H, H], b: Tensor[H]) -> Tensor[H]:
    return cell(x, (W, b))

def even(xs: List[Tensor[H]], W: Tensor[H, H]) -> List[Tensor[H]]:
    match xs:
        case Nil():
            return Nil()
        case Cons(x, rest):
            return Cons(dense(x, W), odd(rest, W))

def odd(xs: List[Tensor[H]], W: Tensor[H, H]) -> List[Tensor[H]]:
    match xs:
        case Nil():
            return Nil()
        case Cons(x, rest):
            return Cons(sigmoid(dense(x, W)), even(rest, W))

def main(
    xs: List[Tensor[H]], y: Tensor[H]
) -> tuple[List[Tensor[H]], List[Tensor[H]], List[Tensor[H]], List[Tensor[H]], Tensor[H]]:
    a = map(apply, xs, W1, b1)
    b = map(apply, xs, W2, b2)
    return a, b, even(xs, W1), odd(xs, W2), apply(y, W1 * 0.5, b1)
"""


def setup():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m)
    anf, _ = run([ToANF()], m, params)
    rng = np.random.default_rng(0)
    xs = [(from_list([vec(rng, 4) for _ in range(k)]), vec(rng, 4)) for k in (0, 1, 4)]
    return anf, params, xs


def callees(m, fn):
    return {e.fn for e in walk(m.function_map[fn].body) if isinstance(e, (FnCall, Map))}


def test_specialize_golden():
    m, params, xs = setup()
    out, ctx = check_pass(SpecializeWeights(), m, params, xs, case="contexts")
    fns = {f.name: f for f in out.functions}
    # map extra arguments, tuples of weights and mutual recursion all give contexts
    assert set(fns) == {
        "cell", "cell_dup1", "cell_dup2", "apply", "apply_dup1", "apply_dup2",
        "even", "even_dup1", "odd", "odd_dup1", "main",
    }  # fmt: skip
    assert weights_read(fns["cell"]) == {"W1", "b1"}
    assert weights_read(fns["cell_dup1"]) == {"W2", "b2"}
    # W1 * 0.5 is not a weight: that clone keeps W as a parameter and fixes only b1
    assert weights_read(fns["cell_dup2"]) == {"b1"}
    assert [p.name for p in fns["apply_dup2"].params] == ["x", "W"]
    assert [p.name for p in fns["apply"].params] == ["x"]
    # even(W1) calls odd(W1) and odd(W2) calls even(W2): the cycle is specialized per weight
    assert weights_read(fns["even"]) == {"W1"} and callees(out, "even") == {"odd_dup1"}
    assert weights_read(fns["odd_dup1"]) == {"W1"} and callees(out, "odd_dup1") == {"even"}
    assert weights_read(fns["odd"]) == {"W2"} and callees(out, "odd") == {"even_dup1"}
    assert weights_read(fns["even_dup1"]) == {"W2"} and callees(out, "even_dup1") == {"odd"}
    assert "even -> even_dup1 for W2" in ctx.notes["SpecializeWeights"]


def test_off_leaves_module_unchanged():
    m, params, _ = setup()
    out, _ = run([SpecializeWeights()], m, params, CompileOptions(taint_specialization=False))
    assert out == m


def test_same_weights_twice_is_one_function():
    src = SRC.replace("b = map(apply, xs, W2, b2)", "b = map(apply, xs, W1, b1)")
    m = acrobat.parse(src)
    out, _ = run([ToANF(), SpecializeWeights()], m, acrobat.init_params(m))
    assert "apply_dup1" in out.function_map  # for W1 * 0.5
    assert "apply_dup2" not in out.function_map


def front(name):
    spec = acrobat.models.load(name, "tiny")
    passes = [ToANF(), InlineSmallFunctions(), EliminateDeadCode(), SpecializeWeights()]
    out, _ = run(passes, spec.module, spec.params)
    return out


def test_birnn_forward_and_backward_rnn():
    out = front("birnn")
    assert weights_read(out.function_map["rnn"]) == {"W_fw", "U_fw", "b_fw"}
    assert weights_read(out.function_map["rnn_dup1"]) == {"W_bw", "U_bw", "b_bw"}
    assert callees(out, "rnn") == {"rnn"} and callees(out, "rnn_dup1") == {"rnn_dup1"}
    assert [p.name for p in out.function_map["rnn_dup1"].params] == ["xs", "h"]


@pytest.mark.parametrize("k", range(6))
def test_berxit_six_layers(k):
    out = front("berxit")
    suffix = "" if k == 0 else f"_dup{k}"
    layer = out.function_map[f"encoder_layer{suffix}"]
    n = k + 1
    assert weights_read(layer) == {
        f"{w}_{n}" for w in ("g_att", "be_att", "W_1", "b_1", "W_2", "b_2", "g_ffn", "be_ffn")
    }
    assert callees(out, layer.name) == {f"attention{suffix}"}
    att = out.function_map[f"attention{suffix}"]
    assert weights_read(att) == {f"W_qkv_{n}", f"b_qkv_{n}", f"W_o_{n}", f"b_o_{n}"}
