"""Hoisting at run time (issue #5, item 6; docs/paper.md §5).

Kernels that do not depend on recursive results get a static depth, so the nodes of each
such kernel, from every instance and every recursion level, form ONE batch among the
first batches of the run.

In the binary TreeLSTM the leaves would batch together even without hoisting: nothing
runs before ``parallel(cell(left), cell(right))``, so every leaf is recorded at the
depth the recursion started with (docs/paper.md §4: parallel children start at the same
depth). The child-sum TreeLSTM embeds and projects each node's word *before* recursing
into its children, so there hoisting is what batches those projections.
"""

from __future__ import annotations

from collections import defaultdict

import acrobat
from acrobat.ir.nodes import KernelCall
from acrobat.ir.traversal import walk
from acrobat.trace import NodeRecorded
from tests.runtime.helpers import assert_outputs_equal, batch, program, spec


def static_depth_kernels(prog) -> set[str]:
    """Kernels called with a static (hoisted) depth anywhere in the program."""
    return {
        e.kernel
        for f in prog.module.functions
        if not f.is_kernel
        for e in walk(f.body)
        if isinstance(e, KernelCall) and e.depth is not None
    }


def batches_by_kernel(res) -> dict[str, set[int]]:
    """The batches each kernel's nodes ran in (one pass: these programs have no fibers)."""
    assert res.stats["passes"] == 1
    out: dict[str, set[int]] = defaultdict(set)
    for e in res.trace.of(NodeRecorded):
        out[e.kernel].add(e.batch)
    return out


def count_leaves(tree) -> int:
    count, stack = 0, [tree]
    while stack:
        t = stack.pop()
        if t.ctor == "Leaf":
            count += 1
        else:
            stack.extend(t.fields)
    return count


def _leaf_run(disabled: tuple[str, ...]):
    xs, refs = batch("treelstm", 8, 0)
    prog = program("treelstm", disabled)
    res = acrobat.run(prog, xs, trace_level="nodes")
    leaves = sum(count_leaves(x) for x in xs)
    # the leaf kernel: the one whose nodes have no tensor inputs, one per leaf
    sources = defaultdict(list)
    for e in res.trace.of(NodeRecorded):
        if not e.inputs:
            sources[e.kernel].append(e.batch)
    (leaf_batches,) = sources.values()
    assert len(leaf_batches) == leaves
    return prog, res, refs, leaf_batches


def test_treelstm_leaves_run_in_one_first_batch_with_hoisting():
    prog, res, refs, leaf_batches = _leaf_run(())
    assert static_depth_kernels(prog)
    assert set(leaf_batches) == {0}  # ONE batch, the first
    assert_outputs_equal(res.outputs, refs)


def test_treelstm_leaves_batch_by_inline_depth_without_hoisting():
    prog, res, refs, leaf_batches = _leaf_run(("hoisting",))
    assert not static_depth_kernels(prog)
    assert set(leaf_batches) == {0}  # parallel children start at the same depth
    assert_outputs_equal(res.outputs, refs)


def test_childsum_hoisted_kernels_run_first_and_once():
    """Each hoisted kernel runs in one batch; the key buckets run them first (leveling
    orders batches by the chains behind them, so a lookup whose results wait long may
    run after the first dynamic batch)."""
    xs, refs = batch("treelstm_childsum", 8, 0)
    for disabled in ((), ("leveling",)):
        prog = program("treelstm_childsum", disabled)
        hoisted = static_depth_kernels(prog)
        assert hoisted
        res = acrobat.run(prog, xs, trace_level="nodes")
        assert_outputs_equal(res.outputs, refs)
        where = batches_by_kernel(res)
        for k in hoisted:
            assert len(where[k]) == 1, f"{k} ran in batches {sorted(where[k])}"
        if disabled:
            first = set().union(*(where[k] for k in hoisted))
            rest = set().union(*(b for k, b in where.items() if k not in hoisted))
            assert max(first) < min(rest)
            assert first == set(range(len(first)))


def test_childsum_without_hoisting_spreads_those_kernels():
    # independence off too: with independence every node's embedding starts at its
    # cell's entry depth (the children's cells start there as well); leveling
    # would merge buckets of input-only kernels at run time (next test). Embedding tables
    # off in both programs: without hoisting, fusion joins the leaves' lookups to the
    # kernels after them, so the kernels followed here by name would not exist.
    xs, refs = batch("treelstm_childsum", 8, 0)
    hoisted = static_depth_kernels(program("treelstm_childsum", ("embedding_tables",)))
    prog = program(
        "treelstm_childsum", ("hoisting", "leveling", "independence", "embedding_tables")
    )
    assert not static_depth_kernels(prog)
    res = acrobat.run(prog, xs, trace_level="nodes")
    assert_outputs_equal(res.outputs, refs)
    where = batches_by_kernel(res)
    assert hoisted <= set(where)
    assert all(len(where[k]) > 1 for k in hoisted)
    on = acrobat.run(program("treelstm_childsum"), xs, trace_level="off", strategy="batched")
    on = on.stats["launches"]
    assert on < res.stats["launches"]


def test_childsum_leveling_gathers_what_hoisting_would():
    """Without hoisting, the run-time leveling of the acrobat policy still runs each
    input-only kernel in one batch: its nodes are ready from the start (embedding tables
    off, as in the test before)."""
    xs, refs = batch("treelstm_childsum", 8, 0)
    hoisted = static_depth_kernels(program("treelstm_childsum", ("embedding_tables",)))
    s = spec("treelstm_childsum")
    options = acrobat.CompileOptions().without("hoisting", "independence", "embedding_tables")
    prog = acrobat.compile(s.module, s.params, options)
    res = acrobat.run(prog, xs, trace_level="nodes")
    assert_outputs_equal(res.outputs, refs)
    where = batches_by_kernel(res)
    assert all(len(where[k]) == 1 for k in hoisted)
