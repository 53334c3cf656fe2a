"""The native flush planner (``plan_rows``, ``acrobat/native/plan.c``) against the same
integer work written in NumPy, and its refusals of bad arguments (a typed error, never
a write out of bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from acrobat import native

OUT = 1


@pytest.fixture(scope="module")
def plan_rows():
    mod = native.load()
    if mod is None:
        pytest.skip(f"the native module is off: {native.status()}")
    return mod.plan_rows


def _flush(rng, n_kernels=4, cap=4000):
    """Random jobs of a flush: records whose output ids are distinct, inputs that name
    earlier values or the flush's own outputs; with what NumPy says they must give."""
    next_id = 500
    jobs, want = [], []
    row_of = rng.integers(0, 1000, cap).astype(np.int64)
    arena_of = rng.integers(0, 5, cap).astype(np.int16)
    outs_so_far = []
    for _ in range(n_kernels):
        n_out, n_in = int(rng.integers(0, 3)), int(rng.integers(0, 4))
        width = 3 + n_in + 1  # key, out, inst, inputs, one host int
        n_rec = int(rng.integers(1, 40))
        records = np.zeros((n_rec, width), np.int64)
        records[:, OUT] = next_id + np.arange(n_rec) * max(n_out, 1)
        next_id += n_rec * max(n_out, 1)
        outs_so_far.extend(records[:, OUT].tolist())
        for c in range(n_in):
            pool = np.array(outs_so_far + list(range(0, 500)))
            records[:, 3 + c] = rng.choice(pool, n_rec)
            if rng.random() < 0.5:  # consecutive ids: often one block of rows
                records[:, 3 + c] = np.arange(n_rec) + int(rng.integers(0, 400))
        nodes = rng.permutation(n_rec)[: int(rng.integers(0, n_rec + 1))].astype(np.int64)
        cuts = np.sort(rng.integers(0, len(nodes) + 1, int(rng.integers(0, 3))))
        sizes = np.diff(np.concatenate([[0], cuts, [len(nodes)]])).tolist()
        firsts = [tuple(int(x) for x in rng.integers(0, 900, n_out)) for _ in sizes]
        out_index = tuple(int(x) for x in rng.integers(0, 7, n_out))
        in_cols = tuple(range(3, 3 + n_in))
        rec = np.empty((len(nodes), width), np.int64)
        rows = np.empty((n_in, len(nodes)), np.int64)
        jobs.append((records, nodes, rec, sizes, firsts, out_index, in_cols, rows))
        want.append((records[nodes], sizes, firsts, out_index, in_cols))
    return jobs, want, row_of, arena_of


def _numpy_plan(want, row_of, arena_of):
    for rec, sizes, firsts, out_index, _ in want:
        at = 0
        for n, first in zip(sizes, firsts):
            for j, index in enumerate(out_index):
                ids = rec[at : at + n, OUT] + j
                row_of[ids] = first[j] + np.arange(n)
                arena_of[ids] = index
            at += n
    results = []
    for rec, sizes, _, _, in_cols in want:
        rows = np.stack([row_of[rec[:, c]] for c in in_cols]) if in_cols else None
        starts = []
        at = 0
        for n in sizes:
            for i in range(len(in_cols)):
                r = rows[i, at : at + n]
                starts.append(int(r[0]) if n and (np.diff(r) == 1).all() else -1)
            at += n
        results.append((rows, starts))
    return results


@pytest.mark.parametrize("seed", range(25))
def test_plan_rows_equals_numpy(plan_rows, seed):
    rng = np.random.default_rng(seed)
    jobs, want, row_of, arena_of = _flush(rng)
    ref_row, ref_arena = row_of.copy(), arena_of.copy()
    expected = _numpy_plan(want, ref_row, ref_arena)
    got = plan_rows(jobs, row_of, arena_of, OUT)
    assert len(got) == len(jobs)
    assert np.array_equal(row_of, ref_row) and np.array_equal(arena_of, ref_arena)
    for job, (rec, *_), (rows, starts), got_starts in zip(jobs, want, expected, got):
        assert np.array_equal(job[2], rec)
        if rows is not None:
            assert np.array_equal(job[7], rows)
        assert got_starts == starts


def test_prefilled_records_are_used_as_they_are(plan_rows):
    """``nodes`` None: ``rec`` is already the records (a twin group's reordered rows)."""
    rec = np.array([[0, 10, 0, 3], [0, 11, 1, 4], [0, 12, 2, 5]], np.int64)
    row_of = np.zeros(20, np.int64)
    row_of[3:6] = [7, 8, 9]
    arena_of = np.zeros(20, np.int16)
    rows = np.empty((1, 3), np.int64)
    job = (None, None, rec, [2, 1], [(40,), (50,)], (2,), (3,), rows)
    (starts,) = plan_rows([job], row_of, arena_of, OUT)
    assert row_of[10:13].tolist() == [40, 41, 50] and arena_of[10:13].tolist() == [2, 2, 2]
    assert rows.tolist() == [[7, 8, 9]] and starts == [7, 9]


def test_an_input_made_in_the_same_flush_gets_its_new_row(plan_rows):
    """Every output of every job is placed before any input is looked up."""
    row_of = np.full(10, -5, np.int64)
    arena_of = np.zeros(10, np.int16)
    consumer = np.array([[0, 8, 0, 4]], np.int64)  # reads value 4, made by the job after
    producer = np.array([[0, 4, 0, 0]], np.int64)
    one = np.array([0], np.int64)
    jobs = [
        (
            consumer,
            one,
            np.empty((1, 4), np.int64),
            [1],
            [(0,)],
            (0,),
            (3,),
            np.empty((1, 1), np.int64),
        ),
        (
            producer,
            one,
            np.empty((1, 4), np.int64),
            [1],
            [(6,)],
            (1,),
            (),
            np.empty((0, 1), np.int64),
        ),
    ]
    starts = plan_rows(jobs, row_of, arena_of, OUT)
    assert jobs[0][7].tolist() == [[6]] and starts == [[6], []]


def _job(**change):
    base = dict(
        records=np.zeros((3, 4), np.int64),
        nodes=np.array([0, 1, 2], np.int64),
        rec=np.empty((3, 4), np.int64),
        sizes=[3],
        firsts=[(0,)],
        out_index=(0,),
        in_cols=(3,),
        rows=np.empty((1, 3), np.int64),
    )
    base.update(change)
    return tuple(base.values())


@pytest.mark.parametrize(
    "change, error",
    [
        (dict(nodes=np.array([0, 1, 3], np.int64)), IndexError),  # no record 3
        (dict(nodes=np.array([0, -1, 2], np.int64)), IndexError),
        (dict(records=np.full((3, 4), 99, np.int64)), IndexError),  # ids past row_of
        (dict(in_cols=(4,)), IndexError),  # no column 4
        (dict(sizes=[2]), ValueError),  # sizes do not add up to the nodes
        (dict(sizes=[4, -1]), ValueError),
        (dict(firsts=[]), ValueError),
        (dict(firsts=[(0, 1)]), ValueError),  # one first row per output
        (dict(out_index=(40000,)), ValueError),  # not an int16 arena number
        (dict(rows=np.empty((2, 3), np.int64)), ValueError),
        (dict(rec=np.empty((3, 4), np.int32)), ValueError),
        (dict(nodes=np.array([0, 1, 2], np.int32)), ValueError),
        (dict(nodes=np.arange(6)[::2]), (ValueError, BufferError)),  # not contiguous
    ],
)
def test_bad_arguments_raise(plan_rows, change, error):
    row_of = np.zeros(10, np.int64)
    arena_of = np.zeros(10, np.int16)
    with pytest.raises(error):
        plan_rows([_job(**change)], row_of, arena_of, OUT)


def test_bad_tables_raise(plan_rows):
    job = _job()
    with pytest.raises(ValueError):
        plan_rows([job], np.zeros(10, np.int32), np.zeros(10, np.int16), OUT)
    with pytest.raises(ValueError):
        plan_rows([job], np.zeros(10, np.int64), np.zeros(10, np.int64), OUT)
    with pytest.raises(TypeError):
        plan_rows([job[:7]], np.zeros(10, np.int64), np.zeros(10, np.int16), OUT)
    with pytest.raises(TypeError):
        plan_rows([job], np.zeros(10, np.int64), np.zeros(10, np.int16))
    assert plan_rows([], np.zeros(10, np.int64), np.zeros(10, np.int16), OUT) == []
