"""CoarsenGrains: each straight-line run of kernel calls becomes one kernel (one DFG node)."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.ir.parser import parse_module
from acrobat.ir.values import entry_args, from_list
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.anf import ToANF
from acrobat.passes.coarsen import CoarsenGrains
from acrobat.passes.fuse import FuseOps
from acrobat.passes.hoist import HoistStaticDepth
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, kernel_calls, run, vec
from tests.passes.test_hoist import SRC as RNN
from tests.passes.test_hoist import DepthOracle

KERNELS = """
kernel @k_dense(%x: Tensor[4]) -> Tensor[4] {
  let %y: Tensor[4] = dense(%x, $U);
  let %z: Tensor[4] = tanh(%y);
  %z
}
kernel @k_embed_add(%w: int, %a: Tensor[4]) -> Tensor[4] {
  let %e: Tensor[4] = embed($E, %w);
  let %s: Tensor[4] = add(%e, %a);
  %s
}
"""

HEAD = """# acrobat IR
size H = 4
size V = 10
param E: Tensor[10, 4]
param U: Tensor[4, 4]
"""

# host arithmetic that reads nothing of the run moves before the merged call; a tuple
# holding a run's result (and the host int taken from it) ends the run
HOST_BETWEEN = (
    HEAD
    + """def @main(%x: Tensor[4], %i: int) -> (Tensor[4], Tensor[4]) {
  let %a: Tensor[4] = @k_dense(%x);
  let %a2: Tensor[4] = %a;
  let %j: int = h.add(%i, 1);
  let %b: Tensor[4] = @k_embed_add(%j, %a2);
  let %t: (Tensor[4], int) = (%b, %i);
  let %n: int = %t.1;
  let %c: Tensor[4] = @k_embed_add(%n, %b);
  let %d: Tensor[4] = @k_dense(%c);
  (%d, %a)
}"""
    + KERNELS
)

# hoisted calls merge at one depth, or when the later reads the earlier; never with
# dynamic calls
DEPTHS = (
    HEAD
    + """def @main(%x: Tensor[4], %y: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = hoist(0) @k_dense(%x);
  let %b: Tensor[4] = hoist(0) @k_dense(%y);
  let %c: Tensor[4] = hoist(2) @k_dense(%y);
  let %d: Tensor[4] = @k_dense(%c);
  let %e: Tensor[4] = @k_dense(%d);
  let %f: Tensor[4] = hoist(1) @k_dense(%a);
  let %g: Tensor[4] = hoist(2) @k_dense(%f);
  let %s: Tensor[4] = add(%a, %b);
  let %s2: Tensor[4] = add(%s, %e);
  add(%s2, %g)
}"""
    + KERNELS
)


def xs_pair(seed, n=3):
    rng = np.random.default_rng(seed)
    return [(vec(rng, 4), int(k)) for k in rng.integers(0, 8, n)]


def test_host_between_calls():
    m = parse_module(HOST_BETWEEN)
    params = acrobat.init_params(m)
    out, ctx = check_pass(CoarsenGrains(), m, params, xs_pair(0), case="host_between")
    main = out.function_map["main"].body
    assert [b.var.name for b in main.bindings][:2] == ["j", "n_1"]  # j moved before the call
    assert [k.kernel for k in kernel_calls(out, "main")] == ["main_node0", "main_node1"]
    assert ctx.facts.coarse_groups["main_node0"] == ["k_dense", "k_embed_add"]
    assert ctx.notes["CoarsenGrains"] == ["2 run(s) of kernel calls merged into one node each"]


def test_static_and_dynamic_runs():
    m = parse_module(DEPTHS)
    params = acrobat.init_params(m)
    rng = np.random.default_rng(1)
    xs = [(vec(rng, 4), vec(rng, 4))]
    out, _ = check_pass(CoarsenGrains(), m, params, xs, case="depths")
    calls = kernel_calls(out, "main")
    # a, b at depth 0 merge; c (depth 2) does not read them; d, e dynamic; f, g read-chain
    assert [k.depth for k in calls] == [0, 2, None, 1]
    # d -> e and f -> g are the same chain: one kernel, called dynamically and hoisted
    assert calls[2].kernel == calls[3].kernel
    assert [len(out.function_map[k.kernel].body.bindings) for k in calls] == [6, 2, 6, 6]


def test_rnn_golden():
    m = acrobat.parse(RNN)
    params = acrobat.init_params(m)
    hoisted, _ = run([ToANF(), FuseOps(), HoistStaticDepth()], m, params)
    rng = np.random.default_rng(2)
    xs = [(from_list([vec(rng, 4) for _ in range(k)]), vec(rng, 4)) for k in (0, 3)]
    out, _ = check_pass(CoarsenGrains(), hoisted, params, xs, case="rnn")
    assert [k.depth for k in kernel_calls(out, "rnn")] == [0, None]


def test_off_leaves_module_unchanged():
    m = parse_module(HOST_BETWEEN)
    out, _ = run([CoarsenGrains()], m, acrobat.init_params(m), CompileOptions(coarsening=False))
    assert out == m


def test_kernel_and_call_site_table():
    rows = []
    for name in MODEL_NAMES + VARIANTS:
        spec = acrobat.models.load(name, "tiny")
        s = acrobat.compile(spec.module, spec.params).stats
        rows.append((name, s["before_coarsening"], s["after_coarsening"]))
    print("\nkernels and DFG-node call sites, before -> after coarsening (tiny)")
    print(f"{'model':<20}{'kernels':>14}{'call sites':>16}")
    for name, b, a in rows:
        k = f"{b['kernels']} -> {a['kernels']}"
        c = f"{b['call_sites']} -> {a['call_sites']}"
        print(f"{name:<20}{k:>14}{c:>16}")
    for name, b, a in rows:
        assert a["kernels"] <= b["kernels"] and a["call_sites"] <= b["call_sites"], name
    fewer = {name for name, b, a in rows if a["call_sites"] < b["call_sites"]}
    assert {"treelstm", "mvrnn", "berxit"} <= fewer


@pytest.mark.parametrize("name", ["treelstm", "berxit"])
def test_explain_shows_the_table(name):
    spec = acrobat.models.load(name, "tiny")
    text = acrobat.explain(spec.module, spec.params)
    s = acrobat.compile(spec.module, spec.params).stats
    assert "kernels and DFG-node call sites" in text
    for label, key in (
        ("after fusion", "before_coarsening"),
        ("after coarsening", "after_coarsening"),
    ):
        row = next(line.split() for line in text.splitlines() if line.strip().startswith(label))
        assert row[-2:] == [str(s[key]["kernels"]), str(s[key]["call_sites"])]


# the second run merges f (depth 0) with g (depth 2), which also reads c from the first run
STALE = (
    HEAD
    + """def @id(%x: Tensor[4]) -> Tensor[4] {
  %x
}
def @main(%x: Tensor[4], %y: Tensor[4]) -> Tensor[4] {
  let %a: Tensor[4] = hoist(0) @k_dense(%x);
  let %c: Tensor[4] = hoist(1) @k_dense(%a);
  let %z: Tensor[4] = @id(%y);
  let %f: Tensor[4] = hoist(0) @k_dense(%z);
  let %g: Tensor[4] = hoist(2) @k_add(%f, %c);
  %g
}
kernel @k_add(%a: Tensor[4], %b: Tensor[4]) -> Tensor[4] {
  let %s: Tensor[4] = add(%a, %b);
  %s
}"""
    + KERNELS
)


def test_merged_depths_are_recomputed_by_hoisting_again():
    m = parse_module(STALE)
    params = acrobat.init_params(m)
    rng = np.random.default_rng(4)
    x = (vec(rng, 4), vec(rng, 4))

    def violations(module):
        oracle = DepthOracle(module, params)
        oracle.run(module.entry, list(entry_args(module, x)))
        return oracle.violations

    assert violations(m) == []
    coarse, _ = run([CoarsenGrains()], m, params)
    # the merged node keeps its first member's depth 0, before c (made at 0) is ready:
    # which is why the pipeline runs HoistStaticDepth again after CoarsenGrains
    assert [k.depth for k in kernel_calls(coarse, "main")] == [0, 0]
    assert violations(coarse) != []
    again, _ = run([HoistStaticDepth()], coarse, params)
    assert [k.depth for k in kernel_calls(again, "main")] == [0, 1]
    assert violations(again) == []
