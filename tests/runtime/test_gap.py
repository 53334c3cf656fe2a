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
