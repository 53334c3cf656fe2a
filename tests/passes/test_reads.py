"""ReadsLast: work that does not need a read's value moves above the read; the host
program records a kernel whose value is only read at the last level of its phase."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import models
from acrobat.codegen.host import LATE
from acrobat.errors import InstanceError
from acrobat.ir.nodes import Let, OpCall
from acrobat.ir.traversal import walk
from acrobat.passes.anf import ToANF
from acrobat.passes.options import CompileOptions
from acrobat.passes.reads import ReadsLast
from tests.passes.helpers import check_pass, run, vec

SRC = """
H = Size("H", 4)
V = Size("V", 3)
W: Param[H, H]
E: Param[V, H]
w: Param[1, H]

def main(x: Tensor[H], tok: int) -> float:
    a = item(sigmoid(dense(x, w)))
    b = 1.0 / a
    h = tanh(dense(x, W))
    e = embed(E, tok)
    c = item(sigmoid(dense(h + e, w)))
    return b + c
"""


def _order(m) -> list[str]:
    body = m.function_map["main"].body
    assert isinstance(body, Let)
    return [b.var.name for b in body.bindings]


def test_work_moves_above_the_read_and_failures_keep_their_order():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m, seed=0)
    anf, _ = run([ToANF()], m, params)
    rng = np.random.default_rng(0)
    xs = [(vec(rng, 4), t) for t in (0, 2)]
    out, ctx = check_pass(ReadsLast(), anf, params, xs, case="independent_work")
    order = _order(out)
    # h = tanh(dense(x, W)) needs no read: it goes above the first item
    assert order.index("h") < order.index("a")
    # embed may fail, and so may 1.0 / a: they keep their order (the same error first)
    assert order.index("b") < order.index("e")
    assert "main: 2 binding(s) moved above a tensor read" in ctx.notes["ReadsLast"]
    off, _ = run([ReadsLast()], anf, params, CompileOptions(independence=False))
    assert off == anf


def test_errors_stay_the_reference_errors():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m, seed=0)
    prog = acrobat.compile(m, params)
    rng = np.random.default_rng(1)
    xs = [(vec(rng, 4), 1), (vec(rng, 4), 7)]  # instance 1: id 7 is outside E
    with pytest.raises(acrobat.EvaluationError):
        acrobat.evaluate(m, xs[1], params)
    with pytest.raises(InstanceError) as err:
        acrobat.run(prog, xs, strategy="batched")
    assert err.value.index == 1


def test_drnn_second_decision_joins_the_node_kernel():
    spec = models.load("drnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    off = acrobat.compile(spec.module, spec.params, CompileOptions(independence=False))
    # p[1:2] no longer waits for item(p[0:1]): it is computed by the node kernel
    assert len(prog.kernels) == len(off.kernels) - 1
    xs = spec.instances(8)
    on_r = acrobat.run(prog, xs, strategy="batched")
    off_r = acrobat.run(off, xs, strategy="batched")
    assert on_r.stats.passes * 2 <= off_r.stats.passes + 1  # one round of reads per level
    assert on_r.stats.launches < off_r.stats.launches
    for x, got in zip(xs, on_r.outputs):
        assert acrobat.values_equal(got, acrobat.evaluate(spec.module, x, spec.params), rtol=1e-4)


def test_a_kernel_only_read_waits_for_the_last_level():
    spec = models.load("stackrnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    src = prog.host_program.source
    assert f"+ {LATE}, o, inst, v_t_2))" in src  # the decision: sigmoid(w_t . top)
    off = acrobat.compile(spec.module, spec.params, CompileOptions(independence=False))
    assert str(LATE) not in off.host_program.source
    xs = spec.instances(8)
    # the key buckets (leveling off, which would also merge those decisions at run time)
    keys = CompileOptions().without("leveling")
    prog = acrobat.compile(spec.module, spec.params, keys)
    off = acrobat.compile(spec.module, spec.params, keys.without("independence"))
    launches = {
        p: acrobat.run(prog, xs, policy=p, strategy="batched").stats.launches
        for p in ("acrobat", "dynet-depth")
    }
    # every decision of a round of reads is one launch: 276 -> 260 at tiny b8
    assert launches["acrobat"] < acrobat.run(off, xs, strategy="batched").stats.launches
    assert launches["acrobat"] < launches["dynet-depth"]


def test_reads_stay_in_order_with_phases():
    m = acrobat.parse(
        """
H = Size("H", 4)
w: Param[1, H]
W: Param[H, H]

def main(x: Tensor[H]) -> float:
    a = item(sigmoid(dense(x, w)))
    phase()
    h = tanh(dense(x, W))
    return a + item(sigmoid(dense(h, w)))
"""
    )
    params = acrobat.init_params(m, seed=0)
    anf, _ = run([ToANF()], m, params)
    out, _ = run([ReadsLast()], anf, params)
    # nothing crosses phase(): the work after it stays after it
    kinds = [type(b.value).__name__ for b in out.function_map["main"].body.bindings]
    ops = [
        b.value.op if isinstance(b.value, OpCall) else kinds[i]
        for i, b in enumerate(out.function_map["main"].body.bindings)
    ]
    assert ops.index("Phase") < ops.index("tanh")
    assert not any(
        isinstance(x, OpCall) and x.op == "ghost" for x in walk(out.function_map["main"].body)
    )
