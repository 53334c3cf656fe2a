"""Branch costs: the fixed number of dynamic-depth steps an expression takes, or None."""

from __future__ import annotations

import pytest

from acrobat.analysis.branch_costs import BranchCosts
from acrobat.ir.nodes import If
from acrobat.ir.parser import parse_module
from acrobat.ir.traversal import walk

SRC = """# acrobat IR
size H = 4
adt List[T] {
  Nil()
  Cons(T, List[T])
}
def @two(%x: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = @k(%x);
  let %b: Tensor[4] = @k(%a);
  %b
}
def @hoisted(%x: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = hoist(0) @k(%x);
  let %b: Tensor[4] = @k(%a);
  %b
}
def @ghosty(%x: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = @k(%x);
  let %g: () = ghost(count=3);
  %a
}
def @calls(%x: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = @two(%x);
  let %b: Tensor[4] = @k(%a);
  %b
}
def @par(%x: Tensor[4]) -> (Tensor[4], Tensor[4]) {
  parallel(@two(%x), @hoisted(%x))
}
def @mapped(%xs: List[Tensor[4]]) -> List[Tensor[4]] {
  map(@two, %xs)
}
def @rec(%n: int, %x: Tensor[4]) -> Tensor[4] {
  let %c: bool = h.gt(%n, 0);
  if (%c) {
    let %m: int = h.sub(%n, 1);
    let %y: Tensor[4] = @k(%x);
    @rec(%m, %y)
  } else {
    %x
  }
}
def @calls_rec(%x: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = @k(%x);
  @rec(3, %a)
}
def @same_if(%c: bool, %x: Tensor[4]) -> Tensor[4] {
  if (%c) {
    let %a: Tensor[4] = @k(%x);
    %a
  } else {
    let %b: Tensor[4] = hoist(0) @k(%x);
    let %d: Tensor[4] = @k(%b);
    %d
  }
}
def @diff_if(%c: bool, %x: Tensor[4]) -> Tensor[4] {
  if (%c) {
    let %a: Tensor[4] = @k(%x);
    %a
  } else {
    @two(%x)
  }
}
def @main(%x: Tensor[4]) -> Tensor[4] {
  @k(%x)
}
kernel @k(%x: Tensor[4]) -> Tensor[4] {
  let %y: Tensor[4] = tanh(%x);
  %y
}
"""

EXPECTED = {
    "two": 2,
    "hoisted": 1,  # a hoisted call takes no dynamic step
    "ghosty": 4,
    "calls": 3,
    "par": 2,  # parallel calls: the longest one
    "mapped": None,  # any number of elements
    "rec": None,
    "calls_rec": None,
    "same_if": 1,
    "diff_if": None,
}


@pytest.mark.parametrize(("fn", "cost"), EXPECTED.items())
def test_function_costs(fn, cost):
    assert BranchCosts(parse_module(SRC)).function(fn) == cost


def test_arms():
    m = parse_module(SRC)
    costs = BranchCosts(m)
    # an arm ending in a tail call into recursion counts the steps before that call
    for fn, arms in (("diff_if", [1, 2]), ("same_if", [1, 1]), ("rec", [1, 0])):
        branch = next(e for e in walk(m.function_map[fn].body) if isinstance(e, If))
        assert costs.arms(branch) == arms
