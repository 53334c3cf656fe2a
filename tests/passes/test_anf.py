"""ToANF: every operand an atom, every intermediate result named, nested lets flattened."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.errors import VerificationError
from acrobat.ir.parser import parse_module
from acrobat.ir.values import AdtValue, from_list
from acrobat.ir.verify import verify
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.anf import ToANF
from tests.passes.helpers import check_pass, run, vec

NESTED = """
H = Size("H", 4)
W: Param[H, H]
U: Param[H, H]
b: Param[H]

def cell(x: Tensor[H], h: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x, W, b) + dense(h, U))

def main(x: Tensor[H], n: int) -> Tensor[H]:
    if n + 1 > 2:
        return cell(x, sigmoid(x) * x)
    return x
"""

TREE = """
H = Size("H", 4)
W: Param[H, 2 * H]

class Tree(ADT):
    Leaf: (Tensor[H],)
    Node: (Tree, Tree)

def f(t: Tree) -> Tensor[H]:
    match t:
        case Leaf(x):
            return tanh(x)
        case Node(l, r):
            a, b = parallel(f(l), f(r))
            return tanh(dense(concat(a, b), W))

def main(ts: List[Tree]) -> List[Tensor[H]]:
    return map(f, ts)
"""

# a block in value position: ToANF splices its bindings into the enclosing block
NESTED_LET = """# acrobat IR
size H = 4
param W: Tensor[4, 4]
def @main(%x: Tensor[4]) -> Tensor[4] {
  let %y: Tensor[4] = {
    let %a: Tensor[4] = tanh(%x);
    dense(%a, $W)
  };
  sigmoid(add(%y, mul(%x, %x)))
}
"""


def test_nested_calls_and_if_condition():
    m = acrobat.parse(NESTED)
    with pytest.raises(VerificationError, match="ANF"):
        verify(m, anf=True)
    rng = np.random.default_rng(0)
    xs = [(vec(rng, 4), n) for n in (0, 1, 2, 5)]
    out, _ = check_pass(ToANF(), m, acrobat.init_params(m), xs, case="nested")
    # the operands of the call inside the branch are computed inside the branch
    assert "if (%t_2) {\n    let %t_3: Tensor[4] = sigmoid(%x);" in out.pretty()


def test_match_parallel_map():
    m = acrobat.parse(TREE)
    rng = np.random.default_rng(1)
    leaf = lambda: AdtValue("Leaf", (vec(rng, 4),))  # noqa: E731
    t = AdtValue("Node", (leaf(), AdtValue("Node", (leaf(), leaf()))))
    xs = [from_list([t, leaf()]), from_list([])]
    check_pass(ToANF(), m, acrobat.init_params(m), xs, case="match_parallel_map")


def test_nested_let_is_flattened():
    m = parse_module(NESTED_LET)
    rng = np.random.default_rng(2)
    out, _ = check_pass(ToANF(), m, acrobat.init_params(m), [vec(rng, 4)], case="nested_let")
    assert out.pretty().count("{") == 1  # one block left: the function body


@pytest.mark.parametrize("name", MODEL_NAMES + VARIANTS)
def test_models_are_anf_and_idempotent(name):
    spec = acrobat.models.load(name, "tiny")
    once, _ = run([ToANF()], spec.module, spec.params)
    verify(once, anf=True)
    twice, _ = run([ToANF()], once, spec.params)
    assert twice == once
