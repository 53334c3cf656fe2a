"""A flush in one native call (``run_flush``, ``acrobat/native/flush.c``, used by untraced
runs on the NumPy backend) calls the same kernels with the same arguments, in the same
order, as the Python path (:meth:`Executor.plan` and :meth:`Executor.launch`), leaves the
same value table behind, and reports what a kernel raises the same way. So does the
acrobat policy's schedule and its flush in one call (``schedule_flush``,
:meth:`Executor.run_leveled`), which makes no Python object per batch."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.models import catalog, load
from acrobat.runtime.executor import Executor
from acrobat.runtime.run import prepare
from acrobat.runtime.schedule import Batch, get_policy, register_policy, unregister_policy
from tests.runtime.helpers import bad_token_program

pytestmark = pytest.mark.skipif(
    native.load() is None or not hasattr(native.load(), "run_flush"),
    reason=f"the native module is off: {native.status()}",
)


def _describe(a):
    """What a kernel got, comparable across the two paths: an arena view by where it
    lies (the native flush makes its views with NumPy's C API, the Python path by slicing:
    the same memory, shape, strides and flags), a gather by its buffer and rows, host ids
    by their values."""
    if isinstance(a, tuple):
        return ("gather", a[0].__array_interface__["data"][0], a[0].shape, a[1].tolist())
    if a.dtype.kind in "iu":
        return ("ids", a.tolist())
    flags = (a.flags.writeable, a.flags.c_contiguous, a.flags.aligned, a.flags.owndata)
    return ("view", a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str, flags)


def _recording(ex: Executor, plans: list, specs: list, calls: list) -> None:
    """Every kernel of ``ex`` (both paths' tables: ``plans``, ``specs`` as they were made)
    wrapped to record its calls in ``calls``."""

    def wrap(k, fn):
        def call(n, *args, out, **kw):
            calls.append(
                (
                    k,
                    n,
                    [_describe(a) for a in args],
                    [_describe(o) for o in out],
                    kw.get("_segs"),
                )
            )
            return fn(n, *args, out=out, **kw)

        return call

    ex.plans = [(wrap(k, p[0]), *p[1:]) for k, p in enumerate(plans)]
    ex.flush_specs = [(wrap(k, s[0]), *s[1:]) for k, s in enumerate(specs)]


PATHS = ("python", "native", "leveled")


def _set_path(ex: Executor, path: str, real: tuple, used: list | None = None) -> None:
    """Which way ``ex`` runs a flush: ``python`` (plan and launch), ``native``
    (``run_flush`` of the Python schedule) or ``leveled`` (``schedule_flush`` where the
    acrobat policy's leveled schedule runs, else ``run_flush``); ``real`` the two natives.
    ``used`` gets an item per ``schedule_flush`` call: what it returned (None until it
    returns)."""
    ex.native_flush = None if path == "python" else real[0]
    ex.native_schedule_flush = None
    if path == "leveled":
        ex.native_schedule_flush = real[1]
        if used is not None:

            def counted(*args):
                used.append(None)
                used[-1] = real[1](*args)
                return used[-1]

            ex.native_schedule_flush = counted


def _both_paths(prog, xs, policy):
    """``(calls, stats, outputs, value table)`` of an untraced run by each of
    :data:`PATHS`, after a warm-up run (so no arena grows, and places compare)."""
    ex = prepare(prog, "numpy").executor
    assert ex.native_flush is not None and ex.native_schedule_flush is not None
    real, plans, specs = (ex.native_flush, ex.native_schedule_flush), ex.plans, ex.flush_specs
    calls: dict = {p: [] for p in PATHS}
    out: dict = {}
    try:
        acrobat.run(prog, xs, policy=policy, strategy="batched", trace_level="off")
        for path in PATHS:
            _recording(ex, plans, specs, calls[path])
            _set_path(ex, path, real, calls.setdefault("schedule_flush", []))
            res = acrobat.run(prog, xs, policy=policy, strategy="batched", trace_level="off")
            out[path] = (res.stats, res.outputs, ex.row_of.copy(), ex.arena_of.copy())
    finally:
        _set_path(ex, "leveled", real)
        ex.plans, ex.flush_specs = plans, specs
    leveled = policy == "acrobat" and prog.options.leveling and prog.options.inline_depth
    # the acrobat policy's flushes went through schedule_flush (none declined), no other's
    assert bool(calls["schedule_flush"]) == leveled
    assert all(r is not None for r in calls["schedule_flush"])
    return calls, out


@pytest.mark.parametrize("model", [m.name for m in catalog()])
@pytest.mark.parametrize("policy", ["acrobat", "dynet-agenda", "eager"])
def test_native_flush_makes_the_same_calls(model, policy):
    spec = load(model, "tiny")
    xs = spec.instances(5, seed=2)
    prog = acrobat.compile(spec.module, spec.params)
    calls, out = _both_paths(prog, xs, policy)
    for path in ("native", "leveled"):
        assert calls[path] == calls["python"]
        assert len(calls[path]) == out[path][0]["launches"]
        (s1, o1, r1, a1), (s2, o2, r2, a2) = out["python"], out[path]
        assert s1["bytes_gathered"] == s2["bytes_gathered"]
        # the arenas' rows: the native flushes set top and peak where a buffer has room
        assert s1["peak_arena_bytes"] == s2["peak_arena_bytes"] > 0
        assert (s1["launches"], s1["passes"], s1["nodes"]) == (
            s2["launches"],
            s2["passes"],
            s2["nodes"],
        )
        assert np.array_equal(r1, r2) and np.array_equal(a1, a2)
        for x, y in zip(o1, o2):
            assert acrobat.values_equal(x, y, rtol=0, atol=0)


@pytest.mark.parametrize(
    "off",
    [(), ("twin_launches",), ("embedding_tables",), ("fused_elementwise",), ("leveling",)],
)
@pytest.mark.parametrize("model", ["birnn", "drnn", "stackrnn", "treelstm"])
def test_native_flush_under_every_option_set(model, off):
    spec = load(model, "tiny")
    xs = spec.instances(4, seed=5)
    prog = acrobat.compile(spec.module, spec.params, acrobat.CompileOptions().without(*off))
    calls, out = _both_paths(prog, xs, "acrobat")
    for path in ("native", "leveled"):
        assert calls[path] == calls["python"]
        for x, y in zip(out["python"][1], out[path][1]):
            assert acrobat.values_equal(x, y, rtol=0, atol=0)


def test_without_gather_fusion_the_python_path_runs():
    """Kernels that take gathered inputs (gather fusion off) are not the native flush's."""
    spec = load("treelstm", "tiny")
    prog = acrobat.compile(
        spec.module, spec.params, acrobat.CompileOptions().without("gather_fusion")
    )
    assert prepare(prog, "numpy").executor.native_flush is None
    xs = spec.instances(3, seed=1)
    res = acrobat.run(prog, xs, trace_level="off", strategy="batched")
    for x, o in zip(xs, res.outputs):
        assert acrobat.values_equal(o, spec.evaluate(x), rtol=1e-4, atol=1e-5)


def test_a_schedule_it_does_not_take_runs_in_python():
    """A user's policy may hand batches of int32 index arrays: ``run_flush`` declines the
    flush before doing anything, and the Python path runs it."""
    acro = get_policy("acrobat")

    @register_policy("int32-nodes")
    def narrow(dfg, inline_depth):
        return [Batch(b.kernel, b.nodes.astype(np.int32), b.level) for b in acro(dfg, inline_depth)]

    try:
        spec = load("treelstm", "tiny")
        xs = spec.instances(4, seed=1)
        prog = acrobat.compile(spec.module, spec.params)
        ex = prepare(prog, "numpy").executor
        real, answers = ex.native_flush, []
        ex.native_flush = lambda *a: answers.append(real(*a)) or answers[-1]
        try:
            res = acrobat.run(prog, xs, policy="int32-nodes", trace_level="off", strategy="batched")
        finally:
            ex.native_flush = real
        assert answers and all(a is None for a in answers)
        for x, o in zip(xs, res.outputs):
            assert acrobat.values_equal(o, spec.evaluate(x), rtol=1e-4, atol=1e-5)
    finally:
        unregister_policy("int32-nodes")


@pytest.mark.parametrize("twins", [True, False])
def test_a_kernel_error_names_the_same_instance_either_way(twins):
    """An embedding id out of range raised inside the native flush is reported as the
    Python path reports it: the same typed error, message and instance."""
    prog = bad_token_program(twins)
    ex = prepare(prog, "numpy").executor
    real = (ex.native_flush, ex.native_schedule_flush)
    errors, used = [], []
    for path in PATHS:
        _set_path(ex, path, real, used)
        try:
            with pytest.raises(acrobat.InstanceError) as e:
                acrobat.run(prog, [1, 7, 12, 3], strategy="batched", trace_level="off")
        finally:
            _set_path(ex, "leveled", real)
        errors.append(e.value)
    assert used  # the leveled path ran (and raised in a kernel)
    assert str(errors[0]) == str(errors[1]) == str(errors[2])
    assert errors[0].index == errors[1].index == errors[2].index == 2
    # and the runtime still runs after it
    res = acrobat.run(prog, [1, 7, 3], strategy="batched", trace_level="off")
    assert len(res.outputs) == 3


def test_schedule_flush_declines_records_it_does_not_take():
    """Records that are not int64 rows (a DFG it was not made for) make ``schedule_flush``
    return None before it runs or places anything; the same flush then runs as before."""
    spec = load("treelstm", "tiny")
    xs = spec.instances(3, seed=4)
    prog = acrobat.compile(spec.module, spec.params)
    runtime = prepare(prog, "numpy")
    ex = runtime.executor
    real = ex.run_leveled
    answers = []

    def narrow_first(dfg, table, log=None):
        if not answers:  # the first flush's records as int32: declined, nothing done
            before = (ex.row_of.copy(), ex.arena_of.copy(), [a.top for a in ex.arena_list])
            narrow = type(dfg)(dfg.kernels, [r.astype(np.int32) for r in dfg.records])
            answers.append(real(narrow, table, log))
            after = (ex.row_of, ex.arena_of, [a.top for a in ex.arena_list])
            assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
            assert before[2] == after[2]
            return answers[-1]
        answers.append(real(dfg, table, log))
        return answers[-1]

    ex.run_leveled = narrow_first
    try:
        res = acrobat.run(prog, xs, trace_level="off", strategy="batched")
    finally:
        del ex.run_leveled
    assert answers[0] is None and len(answers) >= 1
    for x, o in zip(xs, res.outputs):
        assert acrobat.values_equal(o, spec.evaluate(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("leveled", [False, True])
def test_a_failed_launch_of_a_kernel_without_host_ids_reports_its_records(leveled):
    """A kernel that takes no host ids gets no record array (the native flush keeps its
    records in a plain buffer); when such a launch raises, ``failed`` still names the
    batch, its record rows (as an int64 array) and its kernel, and the error propagates."""
    from acrobat.codegen.records import KEY, OUT, STRIDE
    from acrobat.runtime.schedule import schedule

    spec = load("treelstm", "tiny")
    xs = spec.instances(3, seed=4)
    prog = acrobat.compile(spec.module, spec.params)
    runtime = prepare(prog, "numpy")
    ex = runtime.executor
    dfgs = []
    real = ex.run_leveled

    def keep(dfg, table, log=None):
        dfgs.append(dfg)
        return real(dfg, table, log)

    ex.run_leveled = keep
    try:
        acrobat.run(prog, xs, trace_level="off", strategy="batched")
    finally:
        del ex.run_leveled
    dfg = dfgs[0]
    batches = schedule(dfg, "acrobat", prog.options.inline_depth, prog.options.leveling).batches
    tensor_only = [
        i
        for i, b in enumerate(batches)
        if len(b.nodes) and all(arg[1] is not None for arg in ex.flush_specs[b.kernel][2])
    ]
    assert tensor_only  # a TreeLSTM pass has launches of tensors only
    i = tensor_only[0]
    k = batches[i].kernel

    def boom(n, *args, **kw):
        raise RuntimeError("kernel failed")

    specs = [(boom, *s[1:]) if kk == k else s for kk, s in enumerate(ex.flush_specs)]
    failed = [None]
    common = (specs, ex.row_of.copy(), ex.arena_of.copy())
    with pytest.raises(RuntimeError, match="kernel failed"):
        if leveled:
            ex.native_schedule_flush(
                dfg.records,
                runtime.level_table,
                KEY,
                OUT,
                STRIDE,
                *common,
                native.new_int64s,
                failed,
                None,
            )
        else:
            ex.native_flush(batches, dfg.records, *common, OUT, native.new_int64s, failed, None)
    where, rec, kernel = failed[0]
    assert (where, kernel) == (i, k)
    assert rec.dtype == np.int64
    assert np.array_equal(rec, dfg.records[k][batches[i].nodes])


# -- a compiled fiber program's flushes in C (fiber_flush) -------------------------------


def _fiber_runtime(model: str):
    """A fiber model's prepared runtime with its compiled host program, and instances."""
    spec = load(model, "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    runtime = prepare(prog, "numpy")
    runtime.host_c_mode = "1"
    return spec, prog, runtime


def _run_both(prog, runtime, xs, **kw):
    """``(fast, python)``: a run with the native fiber flush, then one with the Python
    flush closure (Runtime.fiber_flush off), both untraced and batched."""
    res = []
    for fast in (True, False):
        if not fast:
            runtime.fiber_flush = lambda st, hs, take: None
        try:
            res.append(acrobat.run(prog, xs, strategy="batched", trace_level="off", **kw))
        finally:
            runtime.__dict__.pop("fiber_flush", None)
    return res


@pytest.mark.parametrize("model", ["stackrnn", "drnn"])
def test_fiber_flush_equals_the_python_flush(model):
    """StackRNN (reads every step) and DRNN (twin kernels joined as taken, spawns): the
    flushes in C give the outputs, launches, passes, nodes, lower bound, bytes gathered
    and arena peak of the Python flush, equal to the interpreter's values."""
    spec, prog, runtime = _fiber_runtime(model)
    xs = spec.instances(7, seed=5)
    acrobat.run(prog, xs, strategy="batched", trace_level="off")  # warm-up: arenas grow
    calls = []
    real = runtime.fiber_flush

    def counted(st, hs, take):
        ff = real(st, hs, take)
        calls.append(ff)
        return ff

    runtime.fiber_flush = counted
    try:
        fast, slow = _run_both(prog, runtime, xs)
    finally:
        runtime.__dict__.pop("fiber_flush", None)
    assert fast.stats.host_code == slow.stats.host_code == "c"
    (ff,) = [f for f in calls if f is not None]
    assert ff.fast > 0  # (the run's last flush, after the fibers, is Runtime.flush's)
    assert ff.fast + ff.slow_calls <= fast.stats.passes <= ff.fast + ff.slow_calls + 1
    for key in ("launches", "passes", "nodes", "lower_bound", "bytes_gathered"):
        assert fast.stats[key] == slow.stats[key], key
    assert fast.stats.peak_arena_bytes == slow.stats.peak_arena_bytes
    for x, a, b in zip(xs, fast.outputs, slow.outputs):
        assert acrobat.values_equal(a, b)
        assert acrobat.values_equal(a, spec.evaluate(x), rtol=1e-4, atol=1e-5)


def test_fiber_flush_declined_or_out_of_room_runs_the_python_flush():
    """Where the native scheduler declines a flush's records, or the value table has no
    room for its ids (a fresh runtime), the records go to Runtime.flush_records: the run
    still equals the interpreter."""
    spec, prog, runtime = _fiber_runtime("stackrnn")
    xs = spec.instances(5, seed=2)
    ex = runtime.executor
    real = ex.native_schedule_flush
    declined = []

    def decline_some(*args):
        if len(declined) < 3:  # the first three calls: declined, nothing done
            declined.append(True)
            return None
        return real(*args)

    ex.native_schedule_flush = decline_some
    try:
        res = acrobat.run(prog, xs, strategy="batched", trace_level="off")
    finally:
        ex.native_schedule_flush = real
    assert len(declined) == 3 and res.stats.host_code == "c"
    for x, o in zip(xs, res.outputs):
        assert acrobat.values_equal(o, spec.evaluate(x), rtol=1e-4, atol=1e-5)


def test_fiber_flush_reports_errors_as_the_python_flush():
    """A token id out of range (raised by a kernel inside the native flush) names the
    same instance with the same message either way, and a memory limit too small raises
    the same typed error; the runtime runs afterwards."""
    spec, prog, runtime = _fiber_runtime("stackrnn")
    xs = spec.instances(4, seed=3)
    acrobat.run(prog, xs, strategy="batched", trace_level="off")
    tokens = acrobat.to_list(xs[2])
    bad = list(xs)
    bad[2] = acrobat.from_list(tokens[:-1] + [10_000])  # past the vocabulary
    errors = []
    for fast in (True, False):
        if not fast:
            runtime.fiber_flush = lambda st, hs, take: None
        try:
            with pytest.raises(acrobat.InstanceError) as e:
                acrobat.run(prog, bad, strategy="batched", trace_level="off")
            errors.append(e.value)
        finally:
            runtime.__dict__.pop("fiber_flush", None)
    assert str(errors[0]) == str(errors[1]) and errors[0].index == errors[1].index == 2
    from acrobat.runtime.arena import ArenaLimitError

    for fast in (True, False):
        if not fast:
            runtime.fiber_flush = lambda st, hs, take: None
        try:
            with pytest.raises(ArenaLimitError):
                acrobat.run(prog, xs, strategy="batched", trace_level="off", memory_limit=4096)
        finally:
            runtime.__dict__.pop("fiber_flush", None)
    res = acrobat.run(prog, xs, strategy="batched", trace_level="off")
    for x, o in zip(xs, res.outputs):
        assert acrobat.values_equal(o, spec.evaluate(x), rtol=1e-4, atol=1e-5)


def test_new_int64s_is_numpy_empty_from_c():
    """Once the native module is loaded, ``native.new_int64s`` is its C allocator: what
    ``numpy.empty(shape, numpy.int64)`` gives, for an int or a tuple, and its errors."""
    mod = native.load()
    assert native.new_int64s is mod.new_int64s
    # ints and pairs through NumPy's C API, other shapes through numpy.empty
    for shape in (0, 5, (3, 4), (0, 7), (), (6,), (2, 3, 4), np.int64(3), [2, 2]):
        a, b = native.new_int64s(shape), np.empty(shape, np.int64)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.flags.c_contiguous and a.flags.writeable and a.flags.owndata
    for bad in (-1, (2, -3), "x", (2**62, 2**62), (1.5,), 2**70):
        with pytest.raises((ValueError, TypeError, OverflowError)) as got:
            native.new_int64s(bad)
        with pytest.raises(got.type):
            np.empty(bad, np.int64)


def test_fiber_flush_leaves_nothing_for_the_cycle_collector():
    """A run through the native fiber flush makes no reference cycle (the flush object
    hands itself to its Python fallback as an argument): it leaves no more unreachable
    objects than the Python flush does, so no young collection follows each run."""
    import gc

    spec, prog, runtime = _fiber_runtime("stackrnn")
    xs = spec.instances(6, seed=1)
    found = {}
    for fast in (True, False):
        if not fast:
            runtime.fiber_flush = lambda st, hs, take: None
        try:
            for _ in range(2):
                acrobat.run(prog, xs, strategy="batched", trace_level="off")
            gc.collect()
            per_run = []
            for _ in range(3):  # the fewest of 3 runs: what earlier tests left aside
                acrobat.run(prog, xs, strategy="batched", trace_level="off")
                per_run.append(gc.collect())
            found[fast] = min(per_run)
        finally:
            runtime.__dict__.pop("fiber_flush", None)
    assert found[True] <= found[False]
