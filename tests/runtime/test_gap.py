"""The gap report: per kernel, where the acrobat policy launches more than DyNet's."""

from __future__ import annotations

import acrobat
from acrobat import models


def test_childsum_gap_names_the_sum_kernels_and_their_lines():
    # the paper's schedule (one launch per depth key and kernel): leveling off
    spec = models.load("treelstm_childsum", "tiny")
    prog = acrobat.compile(spec.module, spec.params, acrobat.CompileOptions().without("leveling"))
    xs = spec.instances(8)
    rep = acrobat.gap_report(prog, xs, source=spec.source)
    # the totals are what real runs of each policy launch (the DFGs do not depend on it)
    for p in ("acrobat", "dynet-depth", "dynet-agenda"):
        assert rep.launches[p] == acrobat.run(prog, xs, policy=p, strategy="batched").stats.launches
    assert rep.lower_bound == acrobat.run(prog, xs, strategy="batched").stats.lower_bound
    assert rep.best_other == "dynet-agenda" and rep.behind > 0
    behind = {k.kernel: k for k in rep.gaps}
    assert "sum_h_k1" in behind  # the child sums: h + sum_h(rest)
    sums = behind["sum_h_k1"]
    assert sums.launches["acrobat"] > sums.launches["dynet-agenda"] >= sums.lower_bound
    assert "sum_h" in sums.functions
    assert any("h + sum_h(rest)" in text for _, text in sums.lines)
    assert sum(k.behind for k in rep.gaps) >= rep.behind
    text = str(rep)
    assert "sum_h_k1" in text and "treelstm_childsum.py:21: return h + sum_h(rest)" in text
    assert "behind dynet-agenda" in text


def test_leveling_closes_the_childsum_gap():
    spec = models.load("treelstm_childsum", "tiny")
    rep = acrobat.gap_report(acrobat.compile(spec.module, spec.params), spec.instances(8))
    assert rep.behind == 0 and rep.gaps == ()
    assert rep.launches["acrobat"] < min(rep.launches["dynet-depth"], rep.launches["dynet-agenda"])


def test_no_gap_where_acrobat_is_best():
    spec = models.load("treelstm", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    rep = acrobat.gap_report(prog, spec.instances(8))
    assert rep.gaps == () and rep.behind == 0
    assert "acrobat is not behind" in rep.table()
    assert all(k.lines == () or all(t == "" for _, t in k.lines) for k in rep.kernels)


def test_explain_with_instances_adds_the_gap_section():
    spec = models.load("stackrnn", "tiny")
    xs = spec.instances(4)
    plain = acrobat.explain(spec.module, spec.params)
    assert "gap:" not in plain
    text = acrobat.explain(spec.module, spec.params, instances=xs, source=spec.source)
    last = plain.rstrip().splitlines()[-1]  # the compile report comes first (times vary)
    assert last in text
    gap = text[text.index(last) + len(last) :]
    assert "gap: acrobat against dynet-depth and dynet-agenda" in gap
    assert "parse_k4" in gap and "pass(es)" in gap  # the decision kernel, rounds of reads


def _assert_totals_are_real_runs(prog, xs, rep):
    for p in ("acrobat", "dynet-depth", "dynet-agenda"):
        assert rep.launches[p] == acrobat.run(prog, xs, policy=p, strategy="batched").stats.launches
    assert rep.lower_bound == acrobat.run(prog, xs, strategy="batched").stats.lower_bound


def test_birnn_twin_groups_are_reported_as_the_kernels_that_ran():
    # twin launches (on by default) add group kernels after the program's
    spec = models.load("birnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(6)
    rep = acrobat.gap_report(prog, xs, source=spec.source)
    _assert_totals_are_real_runs(prog, xs, rep)
    group = {k.kernel: k for k in rep.kernels}["rnn_k1+rnn_dup1_k1"]
    assert group.nodes > 0 and "rnn" in group.functions and "rnn_dup1" in group.functions
    assert any("dense(h, U)" in text for _, text in group.lines)
    assert "rnn_k1" not in {k.kernel for k in rep.kernels}  # its nodes ran in the group


def test_explain_with_instances_on_a_recursive_function_with_two_weight_sets():
    from tests.runtime.test_twins import _two_chains

    module, params, xs = _two_chains()
    text = acrobat.explain(module, params, instances=xs)
    assert "gap: acrobat against dynet-depth and dynet-agenda" in text
    assert "chain_node0+chain_dup1_node0" in text.split("gap:")[1]
    prog = acrobat.compile(module, params)
    _assert_totals_are_real_runs(prog, xs, acrobat.gap_report(prog, xs))
