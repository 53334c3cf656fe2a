"""AddGhostOps: the cheaper branch of an if/match is padded to the same dynamic depth."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.ir.nodes import If, Let, OpCall
from acrobat.ir.traversal import walk
from acrobat.ir.values import from_list
from acrobat.passes.anf import ToANF
from acrobat.passes.fuse import FuseOps
from acrobat.passes.ghost import AddGhostOps
from acrobat.passes.hoist import HoistStaticDepth
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, run, vec

# 1 dynamic kernel (dense + tanh) against 3 (three dense anchors)
SRC = """
H = Size("H", 4)
U: Param[H, H]

def steps(xs: List[int], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(k, rest):
            if k > 0:
                h2 = tanh(dense(h, U))
            else:
                h2 = sigmoid(dense(tanh(dense(dense(h, U), U)), U))
            return steps(rest, h2)

def main(xs: List[int], h: Tensor[H]) -> Tensor[H]:
    return steps(xs, h)
"""

# the inner if (1 vs 2) is padded first; then its branch costs 2 against 3
NESTED = SRC.replace(
    """            if k > 0:
                h2 = tanh(dense(h, U))""",
    """            if k > 0:
                if k > 5:
                    h2 = tanh(dense(h, U))
                else:
                    h2 = tanh(dense(dense(h, U), U))""",
)


def prepare(src):
    m = acrobat.parse(src)
    params = acrobat.init_params(m)
    fused, _ = run([ToANF(), FuseOps(), HoistStaticDepth()], m, params)
    rng = np.random.default_rng(0)
    xs = [(from_list([int(k) for k in rng.integers(-3, 9, n)]), vec(rng, 4)) for n in (0, 2, 6)]
    return fused, params, xs


def ghosts(branch):
    return [e.attr("count") for e in walk(branch) if isinstance(e, OpCall) and e.op == "ghost"]


def test_cheaper_branch_is_padded():
    m, params, xs = prepare(SRC)
    out, ctx = check_pass(AddGhostOps(), m, params, xs, case="one_vs_three")
    branch = next(e for e in walk(out.function_map["steps"].body) if isinstance(e, If))
    assert ghosts(branch.then) == [2] and ghosts(branch.orelse) == []
    # the ghost comes last in the branch: after its kernel, before the branch's value
    assert isinstance(branch.then, Let) and branch.then.bindings[-1].value.op == "ghost"
    # the match: the Cons arm takes 3 steps before its tail call steps(rest, h2); the Nil
    # arm finishes: padding it would only delay instances that are done, so it is left
    assert ctx.notes["AddGhostOps"] == ["steps: branch costs [1, 3] padded by [2, 0]"]
    nil, cons = out.function_map["steps"].body.clauses
    assert ghosts(nil.body) == []


def test_inner_branches_first():
    m, params, xs = prepare(NESTED)
    out, ctx = check_pass(AddGhostOps(), m, params, xs, case="nested")
    outer = next(e for e in walk(out.function_map["steps"].body) if isinstance(e, If))
    inner = next(e for e in walk(outer.then) if isinstance(e, If))
    assert ghosts(inner.then) == [1] and ghosts(inner.orelse) == []
    assert ghosts(outer.then) == [1, 1]  # the inner pad, then the outer one
    assert ctx.notes["AddGhostOps"] == [
        "steps: branch costs [1, 2] padded by [1, 0]",
        "steps: branch costs [2, 3] padded by [1, 0]",
    ]


def test_off_or_unknown_costs_leave_branches_alone():
    m, params, _ = prepare(SRC)
    out, _ = run([AddGhostOps()], m, params, CompileOptions(ghost_ops=False))
    assert out == m
    # TreeLSTM's Node arm recurses in parallel (no fixed cost): nothing to pad
    spec = acrobat.models.load("treelstm", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    assert "ghost" not in prog.module.pretty() and "AddGhostOps" not in prog.notes


def test_stackrnn_reduce_is_padded():
    spec = acrobat.models.load("stackrnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    assert "ghost(count=1)" in prog.module.pretty()
    text = acrobat.explain(spec.module, spec.params)
    assert "parse: branch costs [1, 0] padded by [0, 1]" in text  # REDUCE next to no-op
    # the arm that reads the decision restarts its depth after the read (codegen/host.py),
    # so the SHIFT next to it is not padded to the decision's cost
    assert "[2, 1] padded" not in text
