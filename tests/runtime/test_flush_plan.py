"""The executor's flush plan (:meth:`Executor.plan`): all of a flush's bookkeeping done
before its first launch must equal what allocating batch by batch gives, whether the
native module's ``plan_rows`` (``acrobat/native/plan.c``) or NumPy does the integer work."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.codegen.records import OUT
from acrobat.models import load
from acrobat.runtime.executor import Executor
from acrobat.runtime.run import Runtime


def _checked_plan(seen: list, planner: str):
    real = Executor.plan

    def plan(self, dfg, sched):
        if planner == "numpy":
            self.native_plan = None
        elif self.native_plan is None:
            pytest.skip(f"the native module is off: {native.status()}")
        tops = {i: a.top for i, a in enumerate(self.arena_list)}  # before the flush
        steps = list(real(self, dfg, sched))
        assert len(steps) == len(sched.batches)
        for batch, (k, n, rec, cols, firsts, moved, *segs) in zip(sched.batches, steps):
            assert k == batch.kernel and n == len(batch.nodes)
            want_rec = dfg.records[k][batch.nodes]
            if k >= self.n_kernels:  # a twin group's batch: its rows by member (stable)
                member = want_rec[:, -1]
                want_rec = want_rec[np.argsort(member, kind="stable")]
                counts = np.bincount(member, minlength=len(self.groups[k - self.n_kernels][0]))
                assert segs == [tuple((j, int(c)) for j, c in enumerate(counts) if c)]
            else:
                assert segs == []
            assert np.array_equal(rec, want_rec)
            _, ins, outs, _ = self.plans[k][:4]
            for j, ((arena, index), first) in enumerate(zip(outs, firsts)):
                assert first == tops[index]  # the next block of its arena, in launch order
                tops[index] += n
                assert first + n <= arena.top <= arena.buf.shape[0]  # allocated up front
                ids = rec[:, OUT] + j
                assert np.array_equal(self.row_of[ids], np.arange(first, first + n))
                assert (self.arena_of[ids] == index).all()
            expect_moved = 0
            for (col, arena), got in zip(ins, cols):
                want = rec[:, col] if arena is None else self.row_of[rec[:, col]]
                if arena is None or not self.fused:  # ids, or rows launch() gathers
                    assert np.array_equal(got, want)
                elif isinstance(got, tuple):  # the kernel gathers (arena buffer, rows)
                    assert got[0] is arena.buf and np.array_equal(got[1], want)
                    if self.counts_copies:
                        assert arena.scattered_bytes(want) > 0 or n == 0
                else:  # rows that are one block, as a view of them
                    assert self.counts_copies and arena.scattered_bytes(want) == 0
                    # the rows' own memory (not yet computed: compare places, not values)
                    assert got.ctypes.data == arena.buf[int(want[0])].ctypes.data
                    assert got.shape == (n, *arena.shape)
                if arena is not None and self.counts_copies:
                    expect_moved += arena.scattered_bytes(want)
            assert moved == expect_moved
        seen.append(len(steps))
        yield from steps

    return plan


@pytest.mark.parametrize("planner", ["native", "numpy"])
@pytest.mark.parametrize("model", ["treelstm", "birnn", "drnn", "stackrnn", "nestedrnn"])
@pytest.mark.parametrize("policy", ["acrobat", "dynet-agenda"])
def test_plan_equals_allocating_batch_by_batch(model, policy, planner, monkeypatch):
    seen: list = []
    monkeypatch.setattr(Executor, "plan", _checked_plan(seen, planner))
    # untraced runs too take the Python path here (the native flush, which does the same
    # bookkeeping in C, is held to this path's calls in test_flush_native.py)
    monkeypatch.setattr(Executor, "run_native", lambda self, dfg, sched, log=None: None)
    monkeypatch.setattr(Executor, "run_leveled", lambda self, dfg, table, log=None: None)
    monkeypatch.setattr(Runtime, "fiber_flush", lambda self, st, hs, take: None)
    spec = load(model, "tiny")
    xs = spec.instances(6, seed=3)
    prog = acrobat.compile(spec.module, spec.params)
    for level in ("off", "batches"):
        res = acrobat.run(prog, xs, policy=policy, strategy="batched", trace_level=level)
        for x, out in zip(xs, res.outputs):
            assert acrobat.values_equal(out, spec.evaluate(x), rtol=1e-4, atol=1e-5)
    assert sum(seen) == 2 * res.stats["launches"]


def test_an_empty_batch_from_a_registered_policy_runs(monkeypatch):
    """A user's policy may form a batch of no nodes: nothing is called for it, and the
    outputs still equal the reference (untraced and traced)."""
    from acrobat.runtime.schedule import Batch, get_policy, register_policy, unregister_policy

    acro = get_policy("acrobat")

    @register_policy("with-an-empty-batch")
    def with_empty(dfg, inline_depth):
        batches = acro(dfg, inline_depth)  # an empty one of every kernel, last
        kernels = dict.fromkeys(b.kernel for b in batches)
        return [*batches, *(Batch(k, np.arange(0), batches[-1].level) for k in kernels)]

    try:
        spec = load("treelstm", "tiny")
        xs = spec.instances(3, seed=1)
        prog = acrobat.compile(spec.module, spec.params)
        for level in ("off", "batches"):
            res = acrobat.run(prog, xs, policy="with-an-empty-batch", trace_level=level)
            for x, out in zip(xs, res.outputs):
                assert acrobat.values_equal(out, spec.evaluate(x), rtol=1e-4, atol=1e-5)
    finally:
        unregister_policy("with-an-empty-batch")
