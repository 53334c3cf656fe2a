"""Critical-path leveling (issue: schedules never worse than DyNet's): on every built-in
model the acrobat policy launches no more batches than either DyNet policy on the same
inputs, and the leveled runs equal the reference."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import models
from acrobat.runtime.dfg import DFG, KernelInfo
from acrobat.runtime.schedule import schedule

CASES = [
    (name, dec)
    for name in models.MODEL_NAMES + models.VARIANTS
    for dec in models._module(name).DECISIONS
]


@pytest.mark.parametrize("batch", [8, 64])
@pytest.mark.parametrize(("name", "decisions"), CASES)
def test_acrobat_launches_no_more_than_either_dynet_policy(name, decisions, batch):
    spec = models.load(name, "tiny", decisions)
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(batch)
    launches = {
        p: acrobat.run(prog, xs, policy=p, strategy="batched", trace_level="off").stats.launches
        for p in ("acrobat", "dynet-depth", "dynet-agenda")
    }
    assert launches["acrobat"] <= min(launches["dynet-depth"], launches["dynet-agenda"])


def test_childsum_reaches_the_issue_target_without_parallel():
    """The child-sum TreeLSTM as written (its two child sums one after the other, no
    ``parallel``) launches at most 66 batches at small b8 (DyNet's agenda: 66)."""
    spec = models.load("treelstm_childsum", "small")
    assert "parallel(" not in spec.source
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(8)
    res = acrobat.run(prog, xs, strategy="batched", trace_level="off")
    assert res.stats.launches <= 66
    for x, y in zip(xs, res.outputs):
        assert acrobat.values_equal(y, spec.evaluate(x), rtol=1e-4, atol=1e-5)


def _dfg(records, kernels):
    return DFG(
        kernels,
        [
            np.array(r, np.int64).reshape(-1, 3 + len(k.arg_batched))
            for r, k in zip(records, kernels)
        ],
    )


def test_an_early_finisher_waits_for_the_others():
    """Two independent chains a->a->a->c and a->c: the keys put the short chain's ``c`` at
    depth 1 and the long one's at depth 3 (two launches of c); leveling runs the short
    chain's c with the long one's (one launch)."""
    a = KernelInfo("a", (True,), 1)
    c = KernelInfo("c", (True,), 1)
    # (key, out, inst, arg): value 0 is an input made before this pass
    recs_a = [[0, 1, 0, 0], [1, 2, 0, 1], [2, 3, 0, 2], [0, 5, 1, 0]]
    recs_c = [[3, 4, 0, 3], [1, 6, 1, 5]]
    dfg = _dfg([recs_a, recs_c], [a, c])
    keys = schedule(dfg, "acrobat", leveling=False)
    leveled = schedule(dfg, "acrobat")
    assert [b.kernel for b in keys.batches] == [0, 0, 1, 0, 1]
    assert [(b.kernel, b.nodes.tolist()) for b in leveled.batches] == [
        (0, [0, 3]),
        (0, [1]),
        (0, [2]),
        (1, [0, 1]),
    ]
