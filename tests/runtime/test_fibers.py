"""Fibers and phases (issue #5, item 5; docs/paper.md §7 and §8).

Instances whose control flow reads tensor values run as fibers: each pass executes the
pending DFG of every blocked instance at once, so a batch needs as many passes as its
slowest instance, not more. Decisions drawn at random need no fibers at all. All of a
phase runs before any of the next.
"""

from __future__ import annotations

import bisect

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import acrobat
from acrobat.trace import NodeRecorded, ScheduleFormed
from tests.runtime.helpers import (
    FIBER_MODELS,
    POLICIES,
    RANDOM_MODELS,
    assert_outputs_equal,
    batch,
    program,
    spec,
)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", FIBER_MODELS)
def test_tensor_decisions_run_as_fibers(model, policy):
    assert program(model).taint.fiber_functions
    xs, refs = batch(model, 8, 0)
    res = acrobat.run(program(model), xs, policy=policy)
    assert res.stats["passes"] > 1
    assert_outputs_equal(res.outputs, refs, f"{model}/{policy}")


@pytest.mark.parametrize("model", FIBER_MODELS)
@settings(max_examples=5, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(1, 6))
@example(n=1, seed=0)
def test_a_batch_needs_as_many_passes_as_its_slowest_instance(model, n, seed):
    xs, refs = batch(model, n, seed)
    prog = program(model)
    res = acrobat.run(prog, xs)
    assert_outputs_equal(res.outputs, refs, model)
    alone = [
        acrobat.run(prog, [x], trace_level="off", strategy="batched").stats["passes"] for x in xs
    ]
    assert res.stats["passes"] == max(alone)


@pytest.mark.parametrize("model", RANDOM_MODELS)
def test_random_decisions_need_no_fibers(model):
    prog = program(model, decisions="random")
    assert not prog.taint.fiber_functions
    xs, refs = batch(model, 8, 0, decisions="random")
    res = acrobat.run(prog, xs)
    assert res.stats["passes"] == 1
    assert_outputs_equal(res.outputs, refs, f"{model} (random decisions)")


def test_stackrnn_random_mode_is_one_pass_under_every_policy():
    assert "stackrnn" in RANDOM_MODELS
    xs, refs = batch("stackrnn", 6, 1, decisions="random")
    for policy in POLICIES:
        res = acrobat.run(program("stackrnn", decisions="random"), xs, policy=policy)
        assert res.stats["passes"] == 1
        assert_outputs_equal(res.outputs, refs, f"stackrnn random/{policy}")


def test_long_fiber_instance_does_not_nest_frames():
    """Fiber calls are trampolined: a 2,000-token parse needs no deep C recursion."""
    tokens = acrobat.from_list([i % 50 for i in range(2000)])
    xs, refs = batch("stackrnn", 2, 0)
    res = acrobat.run(program("stackrnn"), [tokens, *xs])
    assert_outputs_equal(res.outputs, [spec("stackrnn").evaluate(tokens), *refs])


# -- phases -------------------------------------------------------------------------------


def _phase_steps(res) -> dict[int, list[tuple[int, int]]]:
    """Per phase, the (pass, batch) of each of its nodes."""
    starts = [0]
    for e in res.trace.of(ScheduleFormed):
        starts.append(starts[-1] + e.nodes)
    steps: dict[int, list[tuple[int, int]]] = {}
    for e in res.trace.of(NodeRecorded):
        steps.setdefault(e.phase, []).append((bisect.bisect_right(starts, e.node) - 1, e.batch))
    return steps


@pytest.mark.parametrize("disabled", [(), ("inline_depth",)], ids=["inline", "traversal"])
@pytest.mark.parametrize("model", ["birnn", "berxit"])
def test_phase_one_runs_after_all_of_phase_zero(model, disabled):
    assert program(model).phases == 2
    xs, refs = batch(model, 6, 0)
    res = acrobat.run(program(model, disabled), xs, policy="acrobat", trace_level="nodes")
    assert_outputs_equal(res.outputs, refs, model)
    steps = _phase_steps(res)
    assert sorted(steps) == [0, 1]
    assert max(steps[0]) < min(steps[1])


def test_phases_off_records_one_phase():
    xs, refs = batch("birnn", 6, 0)
    res = acrobat.run(program("birnn", ("phases",)), xs, trace_level="nodes")
    assert_outputs_equal(res.outputs, refs, "birnn without phases")
    assert set(_phase_steps(res)) == {0}


def test_tail_calls_do_not_grow_the_fiber_stack():
    """A fiber function whose result is a call of another (StackRNN's parse loop) yields
    TAIL: the callee replaces it, so a long sentence never builds a deep generator stack,
    and the results are those of the reference interpreter."""
    from acrobat.codegen.records import TAIL
    from acrobat.runtime import fibers

    assert f"yield ({TAIL}, f_parse(" in program("stackrnn").host_program.source
    deepest = [0]
    real = fibers.Fiber

    class Watched(real):
        __slots__ = ()

        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.stack = _Watched(self.stack)

    class _Watched(list):
        def append(self, g):
            super().append(g)
            deepest[0] = max(deepest[0], len(self))

    xs, refs = batch("stackrnn", 4, 0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fibers, "Fiber", Watched)
        mp.setattr(acrobat.runtime.run, "Fiber", Watched)
        res = acrobat.run(program("stackrnn"), xs)
    assert_outputs_equal(res.outputs, refs, "stackrnn")
    assert deepest[0] <= 2  # main -> parse; each parse step replaces the last


LOOP_SRC = """
H = Size("H", 3)
W: Param[H, H]

def f(x: Tensor[H], flag: bool) -> Tensor[H]:
    for i in range(3):
        x = tanh(dense(x, W)) if flag else sigmoid(x)
    return x

def main(x: Tensor[H]) -> Tensor[H]:
    return f(x, item(sum(x)) > 0.0)
"""


def test_a_fiber_function_whose_only_yield_was_a_self_tail_call_stays_a_generator():
    """A loop whose branch depends on a tensor value is a fiber function; its self tail
    call is a loop, so nothing in it yields any more, and it must still be a generator
    (the fuzzer found a program that sent to a tuple)."""
    m = acrobat.parse(LOOP_SRC)
    p = acrobat.init_params(m, 0)
    prog = acrobat.compile(m, p)
    loops = [f for f in prog.host_program.fibers if f.endswith("_loop1")]
    assert loops, prog.host_program.fibers
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(3).astype(np.float32) for _ in range(6)]
    refs = [acrobat.evaluate(m, x, p) for x in xs]
    assert_outputs_equal(acrobat.run(prog, xs, strategy="batched").outputs, refs, "loop fiber")


def test_reads_of_a_round_are_answered_in_order_whatever_their_mix():
    """``Executor.answer_reads``: one group (every read alike, one arena) and mixed groups
    (item and argmax reads, tensors of several shapes) answer each read as reading that
    value alone would; a read of ``item`` on a tensor of more than one element raises."""
    from acrobat.codegen.records import READ_ARGMAX, READ_ITEM
    from acrobat.runtime.run import prepare

    ex = prepare(program("stackrnn")).executor
    rng = np.random.default_rng(5)
    values = {}
    for vid in range(30):
        shape = [(1,), (), (4,), (3,)][vid % 4]
        values[vid] = rng.standard_normal(shape).astype(np.float32)
        ex.upload(vid, values[vid])

    def want(op, vid):
        x = values[vid]
        return int(x.argmax()) if op == READ_ARGMAX else float(x.reshape(()))

    scalars = [v for v in values if values[v].size == 1]
    vectors = [v for v in values if values[v].size > 1]
    cases = [
        ([READ_ITEM] * len(scalars), scalars),  # one group... and two (two arenas)
        ([READ_ITEM] * 8, [v for v in scalars if values[v].shape == (1,)]),
        ([READ_ARGMAX] * len(vectors), vectors),
        ([READ_ARGMAX] * 3 + [READ_ITEM] * 4, vectors[:3] + scalars[:4]),
        ([READ_ITEM, READ_ARGMAX] * 3, [x for p in zip(scalars, vectors) for x in p][:6]),
        ([], []),
    ]
    for ops, vids in cases:
        assert len(ops) == len(vids)
        assert ex.answer_reads(ops, vids) == [want(op, v) for op, v in zip(ops, vids)]
    with pytest.raises(ValueError):  # not one element
        ex.answer_reads([READ_ITEM], [vectors[0]])


def test_native_read_answers_agree_with_numpy_on_every_case():
    """``read_answers`` (plan.c) against the NumPy path it replaces: float32 and float64
    rows, ties (the first greatest), NaNs (the first NaN, as NumPy's argmax), -0.0 and 0.0,
    infinities; None (the NumPy path answers, or raises) for other dtypes, an ``item`` of
    more than one element, and a zero-size tensor."""
    from acrobat import native
    from acrobat.codegen.records import READ_ARGMAX, READ_ITEM
    from acrobat.runtime.arena import Arena

    mod = native.load()
    if mod is None:
        pytest.skip(f"no native module: {native.status()}")
    rows = [
        [1.0, 3.0, 3.0, 2.0],
        [np.nan, 1.0, np.nan, 5.0],
        [1.0, np.nan, 9.0, np.nan],
        [-0.0, 0.0, -0.0, -1.0],
        [-np.inf, -np.inf, -np.inf, -np.inf],
        [np.inf, 1.0, np.inf, np.nan],
    ]
    for dtype in (np.float32, np.float64):
        vec = Arena((4,), np.dtype(dtype).name)
        one = Arena((1,), np.dtype(dtype).name)
        vec.buf = np.array(rows, dtype)
        one.buf = np.array([[2.5], [np.nan], [-0.0], [1e30]], dtype)
        arenas = [vec, one]
        vids = list(range(len(rows))) + [10, 11, 12, 13]
        row_of = np.array(list(range(len(rows))) + [0] * 4 + [0, 1, 2, 3], np.int64)
        arena_of = np.array([0] * len(rows) + [0] * 4 + [1] * 4, np.int16)
        ops = [READ_ARGMAX] * len(rows) + [READ_ITEM] * 4
        got = mod.read_answers(arenas, ops, vids, row_of, arena_of, READ_ARGMAX)
        want = [int(np.asarray(r, dtype).argmax()) for r in rows]
        want += [float(x) for x in one.buf[:, 0]]
        assert [type(g) for g in got] == [type(w) for w in want]
        assert str(got) == str(want)  # nan == nan as text; -0.0 keeps its sign
        # an item of a 4-element tensor, another dtype, a zero-size tensor: not answered here
        assert mod.read_answers(arenas, [READ_ITEM], [0], row_of, arena_of, READ_ARGMAX) is None
    ints = Arena((3,), "int32")
    ints.buf = np.array([[1, 5, 5]], np.int32)
    empty = Arena((0,), "float32")
    row_of, arena_of = np.zeros(2, np.int64), np.array([0, 1], np.int16)
    args = ([ints, empty], row_of, arena_of, READ_ARGMAX)
    assert mod.read_answers(args[0], [READ_ARGMAX], [0], *args[1:]) is None
    assert mod.read_answers(args[0], [READ_ITEM], [1], *args[1:]) is None
    with pytest.raises(IndexError):
        mod.read_answers(args[0], [READ_ARGMAX], [5], *args[1:])
    with pytest.raises(ValueError):
        mod.read_answers(args[0], [READ_ARGMAX, READ_ITEM], [0], *args[1:])
