"""Laws of schedules (issue #5, item 2), on real DFGs and on generated ones.

A valid schedule runs every node exactly once, after all of its producers, and each of
its batches holds nodes of one kernel. No schedule beats ``lower_bound(dfg)``; eager
runs one node per launch. Dependencies are recomputed here from the records (value ids),
independently of ``DFG.edges``, so the schedulers are not checked against themselves.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acrobat
from acrobat.codegen.records import ARGS, STRIDE
from acrobat.runtime import leveling
from acrobat.runtime.dfg import DFG, KernelInfo
from acrobat.runtime.engines import native as native_engine
from acrobat.runtime.schedule import Batch, Schedule, _one_key_each, lower_bound, schedule
from acrobat.trace import BatchFormed, NodeRecorded, ScheduleFormed
from tests.runtime.helpers import MODELS, POLICIES, batch, captured_schedules, program

# -- an independent reading of a DFG -------------------------------------------------


def nodes_and_edges(dfg: DFG) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Nodes ``(kernel, local)`` in recording order and edges ``(producer, consumer)``.

    A node's outputs are value ids ``out .. out + n_outputs - 1``; value ids grow in
    recording order, and a tensor argument whose id no node here made is an input."""
    nodes, made_by = [], {}
    for k, (info, rec) in enumerate(zip(dfg.kernels, dfg.records)):
        for local, row in enumerate(rec.tolist()):
            nodes.append((row[1], k, local))
            for j in range(info.n_outputs):
                made_by[row[1] + j] = (k, local)
    nodes.sort()
    edges = []
    for _, k, local in nodes:
        row = dfg.records[k][local]
        for a, batched in enumerate(dfg.kernels[k].arg_batched):
            if batched and int(row[ARGS + a]) in made_by:
                edges.append((made_by[int(row[ARGS + a])], (k, local)))
    return [(k, local) for _, k, local in nodes], edges


def kernel_chain_sum(dfg: DFG) -> int:
    """Sum over kernels of the most nodes of that kernel on one path (independently)."""
    nodes, edges = nodes_and_edges(dfg)
    preds = defaultdict(list)
    for p, c in edges:
        preds[c].append(p)
    best: dict[int, int] = {}
    for kernel in {n[0] for n in nodes}:
        count: dict = {}
        for n in nodes:
            own = 1 if n[0] == kernel else 0
            count[n] = own + max((count[p] for p in preds[n]), default=0)
        best[kernel] = max(count.values(), default=0)
    return sum(best.values())


def longest_path(dfg: DFG) -> int:
    """Nodes on the longest dependency path (producers come first in recording order)."""
    nodes, edges = nodes_and_edges(dfg)
    preds = defaultdict(list)
    for p, c in edges:
        preds[c].append(p)
    length = {}
    for n in nodes:
        length[n] = 1 + max((length[p] for p in preds[n]), default=0)
    return max(length.values(), default=0)


def check_schedule(dfg: DFG, sched: Schedule) -> None:
    """The schedule laws; raises AssertionError naming the first one broken."""
    nodes, edges = nodes_and_edges(dfg)
    batch_of: dict[tuple[int, int], int] = {}
    for b, bat in enumerate(sched.batches):
        # one kernel per batch: the batch names one kernel and indexes its records
        assert 0 <= bat.kernel < len(dfg.records), f"batch {b}: no kernel {bat.kernel}"
        assert len(bat.nodes) > 0, f"batch {b} is empty"
        for local in np.asarray(bat.nodes).tolist():
            assert 0 <= local < len(dfg.records[bat.kernel]), f"batch {b}: bad node {local}"
            node = (bat.kernel, local)
            assert node not in batch_of, f"node {node} in batches {batch_of.get(node)} and {b}"
            batch_of[node] = b
    missing = [n for n in nodes if n not in batch_of]
    assert not missing, f"{len(missing)} nodes never scheduled, e.g. {missing[:3]}"
    for p, c in edges:
        assert batch_of[p] < batch_of[c], f"{c} (batch {batch_of[c]}) before its input {p}"
    assert len(sched.batches) >= lower_bound(dfg)
    if sched.policy == "eager":
        assert all(len(b.nodes) == 1 for b in sched.batches)


# -- schedules of the models' real DFGs -------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", MODELS)
def test_model_schedules_are_valid(model, policy):
    xs, _ = batch(model, 6, 1)
    with captured_schedules() as seen:
        res = acrobat.run(program(model), xs, policy=policy)
    assert seen, "no schedule formed"
    for dfg, sched in seen:
        check_schedule(dfg, sched)
    assert res.stats["launches"] == sum(len(s.batches) for _, s in seen)
    assert res.stats["nodes"] == sum(d.num_nodes for d, _ in seen)


@pytest.mark.parametrize("model", MODELS)
def test_runtime_depth_schedule_is_valid(model):
    """``acrobat`` with inline depth off schedules by a traversal instead."""
    xs, _ = batch(model, 6, 1)
    with captured_schedules() as seen:
        acrobat.run(program(model, ("inline_depth",)), xs, policy="acrobat")
    for dfg, sched in seen:
        check_schedule(dfg, sched)


@pytest.mark.parametrize("model", MODELS)
def test_lower_bound_is_the_sum_of_kernel_chains(model):
    xs, _ = batch(model, 6, 1)
    with captured_schedules() as seen:
        acrobat.run(program(model), xs)
    for dfg, _ in seen:
        if not dfg.num_nodes:
            assert lower_bound(dfg) == 0
            continue
        kernels = sum(1 for r in dfg.records if len(r))
        assert lower_bound(dfg) == kernel_chain_sum(dfg)
        assert lower_bound(dfg) >= max(longest_path(dfg), kernels)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", MODELS)
def test_node_events_respect_dependencies(model, policy):
    """The trace's own view: inputs in earlier batches (or passes), one kernel per batch
    (or one twin group's members: acrobat.codegen.twins)."""
    xs, _ = batch(model, 4, 2)
    res = acrobat.run(program(model), xs, policy=policy, trace_level="nodes")
    starts = [0]
    for e in res.trace.of(ScheduleFormed):
        starts.append(starts[-1] + e.nodes)
    events = res.trace.of(NodeRecorded)
    assert [e.node for e in events] == list(range(res.stats["nodes"]))
    when = {e.node: (bisect.bisect_right(starts, e.node) - 1, e.batch) for e in events}
    kernel_of_batch: dict[tuple[int, int], str] = {}
    group_of = {
        m: b.kernel
        for b in res.trace.of(BatchFormed)
        if "+" in b.kernel
        for m in b.kernel.split("+")
    }
    for e in events:
        assert e.batch >= 0
        kernel = group_of.get(e.kernel, e.kernel)
        assert kernel_of_batch.setdefault(when[e.node], kernel) == kernel
        for i in e.inputs:
            assert when[i] < when[e.node], f"node {e.node} runs before its input {i}"
    if policy == "eager":
        assert len(kernel_of_batch) == len(events)


def test_launches_table_against_lower_bound():
    """Launches per model and policy (tiny, batch 8) beside the lower bound; run with -s."""
    rows = []
    for model in MODELS:
        xs, _ = batch(model, 8, 0)
        cells = []
        for policy in POLICIES:
            stats = acrobat.run(program(model), xs, policy=policy, trace_level="off").stats
            assert stats["launches"] >= stats["lower_bound"]
            cells.append(stats["launches"])
        rows.append((model, stats["lower_bound"], stats["passes"], cells))
    head = f"{'model':<18}{'lower':>6}{'passes':>7}" + "".join(f"{p:>14}" for p in POLICIES)
    print("\nlaunches per policy, tiny size, batch 8 (lower bound summed over passes)")
    print(head)
    for model, lb, passes, cells in rows:
        print(f"{model:<18}{lb:>6}{passes:>7}" + "".join(f"{c:>14}" for c in cells))


# -- generated DFGs ---------------------------------------------------------------------


@st.composite
def dfgs(draw, exact_depth: bool = False, spread: bool = False) -> DFG:
    """A random DFG as a host program would record it.

    Every key is deeper than the keys of the node's producers in the same phase (inline
    depth is a conservative levelling); phases only grow in recording order. With
    ``exact_depth`` the key is exactly one more than the deepest producer (no slack).
    ``spread``: more nodes, phases far apart and depths with large gaps (the schedulers'
    sorting paths, as a fiber program's reads at the last depth of a phase take)."""
    kernels = [
        KernelInfo(
            f"k{i}",
            tuple(draw(st.lists(st.booleans(), max_size=3))),
            draw(st.integers(1, 2)),
        )
        for i in range(draw(st.integers(1, 3)))
    ]
    n_inputs = draw(st.integers(1, 3))
    key_of = dict.fromkeys(range(n_inputs), -1)  # value id -> key of its producer
    rows: list[list] = [[] for _ in kernels]
    nv, phase = n_inputs, 0
    for _ in range(draw(st.integers(0, 150 if spread else 40))):
        if not exact_depth and draw(st.integers(0, 9)) == 0:
            phase += draw(st.sampled_from((1, 1000))) if spread else 1
        k = draw(st.integers(0, len(kernels) - 1))
        args, deepest = [], -1
        for batched in kernels[k].arg_batched:
            if batched:
                vid = draw(st.sampled_from(sorted(key_of)))
                if key_of[vid] >= phase * STRIDE:
                    deepest = max(deepest, key_of[vid] - phase * STRIDE)
                args.append(vid)
            else:
                args.append(draw(st.integers(0, 9)))  # a host int
        slack = 0 if exact_depth else draw(st.integers(0, 2))
        if spread and draw(st.integers(0, 4)) == 0:
            slack += draw(st.sampled_from((100, 10**6, 10**9)))
        key = phase * STRIDE + deepest + 1 + slack
        rows[k].append([key, nv, draw(st.integers(0, 3)), *args])
        for j in range(kernels[k].n_outputs):
            key_of[nv + j] = key
        nv += kernels[k].n_outputs
    records = [
        np.array(r, np.int64).reshape(len(r), ARGS + len(info.arg_batched))
        for r, info in zip(rows, kernels)
    ]
    return DFG(kernels, records)


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=150, deadline=None)
@given(dfg=dfgs())
def test_generated_schedules_are_valid(policy, dfg):
    check_schedule(dfg, schedule(dfg, policy))


@settings(max_examples=150, deadline=None)
@given(dfg=dfgs())
def test_generated_runtime_depth_schedules_are_valid(dfg):
    check_schedule(dfg, schedule(dfg, "acrobat", inline_depth=False))


@settings(max_examples=150, deadline=None)
@given(dfg=dfgs())
def test_generated_lower_bound(dfg):
    if not dfg.num_nodes:
        assert lower_bound(dfg) == 0
        return
    kernels = sum(1 for r in dfg.records if len(r))
    assert lower_bound(dfg) == kernel_chain_sum(dfg)
    assert lower_bound(dfg) >= max(longest_path(dfg), kernels)


@settings(max_examples=150, deadline=None)
@given(dfg=dfgs(exact_depth=True))
def test_exact_inline_depths_batch_like_dynet_depth(dfg):
    """When inline depths equal traversal depths, ``acrobat``'s key buckets (leveling off)
    are DyNet's depth batches."""
    ours = schedule(dfg, "acrobat", leveling=False)
    theirs = schedule(dfg, "dynet-depth")
    assert len(ours.batches) == len(theirs.batches)
    assert sorted(len(b.nodes) for b in ours.batches) == sorted(
        len(b.nodes) for b in theirs.batches
    )


@settings(max_examples=150, deadline=None)
@given(dfg=dfgs())
def test_one_kernel_depth_batching_meets_lower_bound(dfg):
    """With a single kernel, batching by traversal depth is optimal."""
    if sum(1 for r in dfg.records if len(r)) == 1:
        assert len(schedule(dfg, "dynet-depth").batches) == lower_bound(dfg)


def test_empty_dfg_has_empty_schedules():
    dfg = DFG([KernelInfo("k", (True,), 1)], [np.zeros((0, 4), np.int64)])
    assert lower_bound(dfg) == 0
    for policy in POLICIES:
        assert schedule(dfg, policy).batches == []


def test_unknown_policy_is_a_name_error():
    dfg = DFG([KernelInfo("k", (True,), 1)], [np.zeros((0, 4), np.int64)])
    with pytest.raises(acrobat.AcrobatNameError):
        schedule(dfg, "greedy")


def test_checker_rejects_broken_schedules():
    """The law checker itself: a reversed, a shortened and a doubled schedule all fail."""
    xs, _ = batch("treelstm", 3, 0)
    with captured_schedules() as seen:
        acrobat.run(program("treelstm"), xs, policy="acrobat")
    dfg, good = seen[0]
    check_schedule(dfg, good)
    broken = [
        good.batches[::-1],
        good.batches[:-1],
        good.batches + good.batches[-1:],
    ]
    for batches in broken:
        with pytest.raises(AssertionError):
            check_schedule(dfg, Schedule(good.policy, batches))


@settings(max_examples=150, deadline=None)
@given(dfg=dfgs())
def test_leveling_never_launches_more_than_the_key_buckets(dfg):
    leveled = schedule(dfg, "acrobat")
    keys = schedule(dfg, "acrobat", leveling=False)
    check_schedule(dfg, keys)
    assert len(leveled.batches) <= len(keys.batches)


@settings(max_examples=100, deadline=None)
@given(dfg=dfgs(exact_depth=True))
def test_leveling_never_launches_more_than_dynet_depth_on_exact_depths(dfg):
    """With exact depths the key buckets are DyNet's depth batches, so leveling (never
    more than the buckets) is at most as many launches as dynet-depth."""
    leveled = schedule(dfg, "acrobat")
    assert len(leveled.batches) <= len(schedule(dfg, "dynet-depth").batches)


def fallback_schedule(dfg: DFG) -> list[Batch]:
    """The acrobat policy's schedule where the native scheduler is off: numba's
    ``_list_schedule`` (or the one-key shortcut), as ``acrobat_schedule`` runs it."""
    one = _one_key_each(dfg.records)
    if one is not None:
        return [Batch(k, np.arange(len(dfg.records[k])), key) for key, k in sorted(one)]
    return list(map(Batch._make, leveling.level_schedule(dfg)))


def same_batches(a: list, b: list) -> bool:
    return [(x.kernel, x.level, np.asarray(x.nodes).tolist()) for x in a] == [
        (x.kernel, x.level, np.asarray(x.nodes).tolist()) for x in b
    ]


_NATIVE = native_engine.make()[0]
NATIVE = (_NATIVE.flush.list_schedule, _NATIVE.new_int64s) if _NATIVE is not None else None
needs_native_scheduler = pytest.mark.skipif(
    NATIVE is None, reason=f"native module off: {acrobat.native.status()}"
)


@needs_native_scheduler
@settings(max_examples=150, deadline=None)
@given(dfg=st.one_of(dfgs(), dfgs(spread=True)))
def test_native_scheduler_equals_the_compiled_one(dfg):
    """sched.c's list_schedule gives numba's schedule, batch for batch (kernel, level,
    local rows), as Batch tuples of int64 row arrays."""
    native = leveling.native_schedule(dfg, Batch, NATIVE)
    assert native is not None
    assert same_batches(native, fallback_schedule(dfg))
    for b in native:
        assert type(b) is Batch and b.nodes.dtype == np.int64 and b.nodes.flags.c_contiguous
    check_schedule(dfg, Schedule("acrobat", native))


@needs_native_scheduler
@pytest.mark.parametrize("model", MODELS)
def test_native_scheduler_equals_the_compiled_one_on_the_models(model):
    xs, _ = batch(model, 24, 3)
    with captured_schedules() as seen:
        acrobat.run(program(model), xs, policy="acrobat")
    for dfg, sched in seen:
        assert same_batches(sched.batches, fallback_schedule(dfg))


def random_dfg(rng: np.random.Generator, instances: int, spread: bool) -> DFG:
    """A large DFG recorded as a host program records one: instance after instance, each
    a random program of a few kernels whose nodes use that instance's recent values (keys
    deeper than their producers' in a phase, phases growing). Its batches take rows
    strided across the instances, gathered from several launches' ready lists: the many-row
    batches, dense and sparse, in and out of order, that small generated DFGs rarely
    make. ``spread``: phases far apart and depths with large gaps."""
    kernels = [KernelInfo("a", (True,), 1), KernelInfo("b", (True, True), 1)]
    kernels += [KernelInfo("c", (True, False, True), 2), KernelInfo("d", (), 1)]
    key_of = {0: -1, 1: -1}
    rows: list[list] = [[] for _ in kernels]
    nv = 2
    for inst in range(instances):
        mine, phase = [0, 1], 0
        for _ in range(int(rng.integers(5, 120))):
            if rng.integers(0, 40) == 0:
                phase += 1000 if spread and rng.integers(0, 2) else 1
            k = int(rng.integers(0, len(kernels)))
            args, deepest = [], -1
            for batched in kernels[k].arg_batched:
                if batched:
                    vid = mine[-int(rng.integers(1, min(len(mine), 6) + 1))]
                    if key_of[vid] >= phase * STRIDE:
                        deepest = max(deepest, key_of[vid] - phase * STRIDE)
                    args.append(vid)
                else:
                    args.append(int(rng.integers(0, 9)))
            slack = int(rng.integers(0, 2))
            if spread and rng.integers(0, 8) == 0:
                slack += int(rng.choice([100, 10**6, 10**9]))
            key = phase * STRIDE + deepest + 1 + slack
            rows[k].append([key, nv, inst, *args])
            for j in range(kernels[k].n_outputs):
                key_of[nv + j] = key
                mine.append(nv + j)
            nv += kernels[k].n_outputs
    records = [
        np.array(r, np.int64).reshape(len(r), ARGS + len(info.arg_batched))
        for r, info in zip(rows, kernels)
    ]
    return DFG(kernels, records)


@needs_native_scheduler
@pytest.mark.parametrize("seed", range(6))
def test_native_scheduler_equals_the_compiled_one_on_large_dfgs(seed):
    rng = np.random.default_rng(seed)
    dfg = random_dfg(rng, 64, spread=seed % 2 == 1)
    native = leveling.native_schedule(dfg, Batch, NATIVE)
    assert same_batches(native, fallback_schedule(dfg))
    check_schedule(dfg, Schedule("acrobat", native))
    again = leveling.native_schedule(dfg, Batch, NATIVE)  # scratch reused: the same again
    assert same_batches(again, native)


@needs_native_scheduler
def test_native_scheduler_declines_what_it_does_not_take():
    """Records that are not int64 rows of their kernel's width: None, and the policy's
    schedule comes from the compiled scheduler instead (the same batches)."""
    xs, _ = batch("treelstm", 6, 0)
    with captured_schedules() as seen:
        acrobat.run(program("treelstm"), xs, policy="acrobat")
    dfg, sched = seen[0]
    narrow = DFG(dfg.kernels, [r.astype(np.int32) for r in dfg.records])
    strided = DFG(dfg.kernels, [np.asfortranarray(r) if len(r) > 1 else r for r in dfg.records])
    for odd in (narrow, strided):
        assert leveling.native_schedule(odd, Batch, NATIVE) is None
        assert same_batches(schedule(odd, "acrobat").batches, sched.batches)
    wide = DFG(dfg.kernels, [np.pad(r, ((0, 0), (0, 1))) for r in dfg.records])
    assert leveling.native_schedule(wide, Batch, NATIVE) is None


@settings(max_examples=100, deadline=None)
@given(dfg=st.one_of(dfgs(), dfgs(spread=True)))
def test_compiled_and_python_leveling_agree(dfg):
    """The numba-compiled scheduler and the same function run as Python give the same
    schedule (the Python one is what runs where numba is missing)."""
    args = leveling.inputs(dfg)
    if args is None:
        return
    fast = leveling._schedule_fn()(*args)
    slow = leveling._list_schedule(*args)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    meta = fast[1].tolist()
    nb, leveled = meta[0], meta[1]
    bounds = meta[2 : nb + 3]
    batches = [
        (k, lv, fast[0][a:z].tolist())
        for k, lv, a, z in zip(meta[nb + 3 : 2 * nb + 3], meta[2 * nb + 3 :], bounds, bounds[1:])
    ]
    keys = schedule(dfg, "acrobat", leveling=False).batches
    if not leveled:  # the key buckets: what the policy makes with leveling off
        assert [(b.kernel, b.level, b.nodes.tolist()) for b in keys] == batches
    else:
        assert len(batches) < len(keys)
