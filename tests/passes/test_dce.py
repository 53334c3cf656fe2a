"""EliminateDeadCode: unused pure bindings and unreachable functions go; effects stay."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.ir.parser import parse_module
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.dce import EliminateDeadCode
from tests.passes.helpers import check_pass, run, vec

SRC = """# acrobat IR
size H = 4
param W: Tensor[4, 4]
def @unused(%x: Tensor[4]) -> Tensor[4] {
  let %y: Tensor[4] = @k_unused(%x);
  %y
}
def @helper(%x: Tensor[4]) -> Tensor[4] {
  let %dead: Tensor[4] = sigmoid(%x);
  let %y: Tensor[4] = @k_used(%x);
  %y
}
def @main(%x: Tensor[4], %n: int) -> Tensor[4] {
  let %a: Tensor[4] = dense(%x, $W);
  let %b: Tensor[4] = tanh(%a);
  let %m: int = h.add(%n, 1);
  let %p: () = phase();
  let %c: Tensor[4] = @helper(%x);
  let %cond: bool = h.gt(%n, 0);
  if (%cond) {
    let %d: Tensor[4] = sigmoid(%c);
    let %g: () = ghost(count=2);
    %c
  } else {
    %x
  }
}
kernel @k_unused(%x: Tensor[4]) -> Tensor[4] {
  let %y: Tensor[4] = tanh(%x);
  %y
}
kernel @k_used(%x: Tensor[4]) -> Tensor[4] {
  let %dead: Tensor[4] = sigmoid(%x);
  let %y: Tensor[4] = tanh(%x);
  %y
}
"""


def test_dce_golden():
    m = parse_module(SRC)
    rng = np.random.default_rng(0)
    xs = [(vec(rng, 4), n) for n in (0, 3)]
    out, ctx = check_pass(EliminateDeadCode(), m, acrobat.init_params(m), xs, case="dead_code")
    text = out.pretty()
    # the dead chain a -> b, the host op, the unused branch value: all gone
    for gone in ("%a:", "%b:", "%m:", "%d:", "%dead:", "@unused", "@k_unused"):
        assert gone not in text
    # phase() and ghost ops move depth: kept although their values are unused
    assert "let %p: () = phase();" in text and "ghost(count=2)" in text
    assert ctx.notes["EliminateDeadCode"] == [
        "removed 6 unused binding(s)",
        "dropped unreachable function(s) unused, k_unused",
    ]


def test_dce_is_idempotent_on_models():
    for name in MODEL_NAMES + VARIANTS:
        spec = acrobat.models.load(name, "tiny")
        once, _ = run([EliminateDeadCode()], spec.module, spec.params)
        twice, ctx = run([EliminateDeadCode()], once, spec.params)
        assert twice == once and "EliminateDeadCode" not in ctx.notes
