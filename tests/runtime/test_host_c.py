"""The compiled host program (acrobat/codegen/host_c.py) against the Python one.

The C program must record exactly the Python program's rows (every kernel, bit for bit),
return the same results and the same next value id, on every model, option set and saved
fuzz case; anything it cannot do (a recursion too deep for C, a host failure, an int past
int64) must leave the run to the Python program, so that values and typed errors are the
Python program's; and the runtime must say which program ran (``RunStats.host_code``).

Programs that read tensor values (fiber functions) run their C functions on fibers of
their own (C stacks): every flush of such a run must get the Python program's rows, in
the same passes, and a C run that stops after a flush executed nodes starts the whole run
over with the Python program.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.codegen.host_c import MAX_C_DEPTH, generate_host_c
from acrobat.errors import InstanceError
from acrobat.fuzz.cases import load as load_case
from acrobat.ir.values import AdtValue, from_list, values_equal
from acrobat.models import MODEL_NAMES, VARIANTS, load
from acrobat.passes.options import OPT_IN, OPTIMIZATIONS
from acrobat.runtime import run as run_mod
from acrobat.runtime.run import _RunState, prepare
from tests.runtime.helpers import run_host_c as run

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"no C compiler here: {native.status()}"
)
CASES = sorted((Path(__file__).parents[1] / "fuzz" / "cases").glob("*.json"))


def both_programs(prog, xs):
    """``(python, c)``, each ``(raw results, records per kernel, next value id)``, of the
    host program run on ``xs`` after the same upload."""
    rt = prepare(prog)
    mod, _ = native.build_extension(prog.host_program.c_source)
    out = []
    for use_c in (False, True):
        st = _RunState(rt, "acrobat", "off")
        rt.begin(st, None)
        args, first = rt.upload(st, xs)
        if use_c:
            weights = tuple(st.weights[n] for n in prog.host_program.weight_values)
            hs = mod.make(AdtValue, weights)
            hs.start(0, first)
            raw = []
            for i, a in enumerate(args):
                hs.start(i)
                raw.append(hs.entry(*a, rt.base))
            recs = [np.frombuffer(hs.records(k), np.int64) for k in range(len(st.lists))]
            out.append((raw, recs, hs.next_value()))
        else:
            rt.python_program(st)  # (made when the Python program is to run)
            st.start(0, first)
            raw = []
            for i, a in enumerate(args):
                st.start(i)
                raw.append(st.entry(*a, rt.base))
            recs = [np.array(lst, np.int64) for lst in st.lists]
            out.append((raw, recs, st.next_value()))
    return out


def run_passes(prog, xs, mode):
    """A run with the C program (mode "1") or the Python one ("0"), and each pass's records
    per DFG kernel."""
    res = run(prog, xs, mode)
    return res, [[np.array(r) for r in dfg.records] for dfg in res.stats._dfgs]


def assert_same_run(prog, xs):
    """A fiber program: the C run flushes the Python run's rows, pass by pass, and returns
    its values."""
    (py, passes_py), (c, passes_c) = run_passes(prog, xs, "0"), run_passes(prog, xs, "1")
    assert py.stats.host_code.startswith("python") and c.stats.host_code == "c"
    assert len(passes_c) == len(passes_py) and len(passes_py) > 1  # reads: several flushes
    for p, (a, b) in enumerate(zip(passes_py, passes_c)):
        assert len(a) == len(b)
        for k, (x, y) in enumerate(zip(a, b)):
            assert np.array_equal(x, y), f"pass {p}, kernel {k}: records differ"
    assert values_equal(py.outputs, c.outputs, rtol=0, atol=0)
    for key in ("nodes", "launches", "passes", "bytes_gathered"):
        assert c.stats[key] == py.stats[key], key


def assert_same_program(prog, xs):
    (raw_py, recs_py, nv_py), (raw_c, recs_c, nv_c) = both_programs(prog, xs)
    assert nv_c == nv_py
    assert len(recs_c) == len(recs_py)
    for k, (a, b) in enumerate(zip(recs_py, recs_c)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"kernel {k} records differ"
    assert values_equal(raw_py, raw_c)
    assert sum(len(r) for r in recs_py) > 0


@needs_native
@pytest.mark.parametrize("name", [*MODEL_NAMES, *VARIANTS])
def test_every_model_records_the_same_rows_in_c(name):
    spec = load(name, "small")
    prog = acrobat.compile(spec.module, spec.params)
    assert prog.host_program.c_source is not None
    if prog.taint.fiber_functions:  # tensor reads: C functions on fibers
        assert_same_run(prog, spec.instances(6, seed=2))
    else:
        assert_same_program(prog, spec.instances(6, seed=2))


OPTION_SETS = [acrobat.CompileOptions().without(o) for o in OPTIMIZATIONS] + [
    acrobat.CompileOptions().with_(o) for o in OPT_IN
]


@needs_native
@pytest.mark.parametrize("name", ["birnn", "treelstm", "nestedrnn", "drnn", "stackrnn"])
@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: str(o)[:60])
def test_option_sets_record_the_same_rows_in_c(name, options):
    spec = load(name, "small")
    prog = acrobat.compile(spec.module, spec.params, options)
    assert prog.host_program.c_source is not None
    if prog.taint.fiber_functions:
        assert_same_run(prog, spec.instances(4, seed=5))
    else:
        assert_same_program(prog, spec.instances(4, seed=5))


@needs_native
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_saved_fuzz_cases_record_the_same_rows_in_c(path):
    case = load_case(path)
    module = acrobat.parse(case.source)
    params = acrobat.init_params(module, 0)
    prog = acrobat.compile(module, params)
    if prog.host_program.c_source is None:  # a construct the C program does not emit
        return
    if prog.taint.fiber_functions:  # the whole run: values or the same typed error
        outcomes = []
        for mode in ("0", "1"):
            try:
                outcomes.append(run_passes(prog, case.instances, mode))
            except acrobat.AcrobatError as err:
                outcomes.append((type(err), str(err)))
        (a, b) = outcomes
        if isinstance(a[0], type):
            assert a == b
            return
        (py, passes_py), (c, passes_c) = a, b
        assert values_equal(py.outputs, c.outputs, rtol=0, atol=0)
        assert len(passes_py) == len(passes_c)
        for x, y in zip(passes_py, passes_c):
            assert all(np.array_equal(r, q) for r, q in zip(x, y))
        return
    try:
        expected = both_programs(prog, case.instances)
    except Exception:  # noqa: BLE001 - an instance that fails: the run-level test covers it
        return
    (raw_py, recs_py, nv_py), (raw_c, recs_c, nv_c) = expected
    assert nv_c == nv_py and values_equal(raw_py, raw_c)
    assert all(np.array_equal(a, b) for a, b in zip(recs_py, recs_c))


def _same_error_either_way(source: str, bad: int, message: str):
    """Run ``source``'s program on a good instance and one with ``bad`` with the Python
    host program and with the C one: both raise the same typed error for instance 1 (its
    text holding ``message``), and the good instance alone runs in C. Returns the program."""
    module = acrobat.parse(source)
    prog = acrobat.compile(module, acrobat.init_params(module))
    assert prog.host_program.c_source is not None
    xs = [(np.ones(2, np.float32), 1), (np.ones(2, np.float32), bad)]
    errors = []
    for mode in ("0", "1"):
        with pytest.raises(InstanceError) as info:
            run(prog, xs, mode)
        errors.append((info.value.index, str(info.value)))
    assert errors[0] == errors[1] and errors[0][0] == 1 and message in errors[0][1]
    assert run(prog, xs[:1], "1").stats.host_code == "c"
    return prog


@needs_native
def test_the_runtime_says_which_program_ran_and_both_give_the_same_values():
    spec = load("birnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(5, seed=1)
    py, c = run(prog, xs, "0"), run(prog, xs, "1")
    assert py.stats.host_code == "python (ACROBAT_HOST_C=0)"
    assert c.stats.host_code == "c"
    assert values_equal(py.outputs, c.outputs)
    assert (c.stats.nodes, c.stats.launches) == (py.stats.nodes, py.stats.launches)
    traced = acrobat.run(prog, xs, policy="acrobat", strategy="batched", trace_level="nodes")
    assert traced.stats.host_code == "c" and values_equal(traced.outputs, py.outputs)
    assert run(prog, xs, "0").stats.host_code.startswith("python")  # switched off again


@needs_native
def test_fiber_programs_run_in_c_and_say_so():
    spec = load("drnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(5, seed=0)
    py, c = run(prog, xs, "0"), run(prog, xs, "1")
    assert c.stats.host_code == "c" and py.stats.host_code == "python (ACROBAT_HOST_C=0)"
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    expected = [spec.evaluate(x) for x in xs]
    assert values_equal(c.outputs, expected, rtol=1e-4, atol=1e-5)
    traced = acrobat.run(prog, xs, policy="acrobat", strategy="batched", trace_level="nodes")
    assert traced.stats.host_code == "c" and values_equal(traced.outputs, py.outputs)


def test_list_reductions_in_c_fibers_equal_the_python_program():
    """sum/max/argmax/attend of Lists, requested from the C program's fibers: the same
    launches and bit-equal values as the Python program's requests; an empty list's error is
    the Python program's (the sanitizer job runs this: the requests' objects)."""
    from tests.frontend.test_list_reductions import REDUCE, _instance

    m = acrobat.parse(REDUCE)
    params = acrobat.init_params(m, 0)
    prog = acrobat.compile(m, params)
    xs = [_instance(n) for n in (1, 2, 3, 7, 12)]
    py, c = run(prog, xs, "0"), run(prog, xs, "1")
    assert c.stats.host_code == "c" and c.stats.launches == py.stats.launches
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    for bad in ("0", "1"):
        with pytest.raises(InstanceError, match="list index out of range") as err:
            run(prog, [*xs[:2], _instance(0)], bad)
        assert err.value.index == 2


def test_python_3_14_keeps_fiber_programs_python(monkeypatch):
    """Python 3.14 checks recursion against the C stack's bounds, which a fiber's stack lies
    outside of: the generator emits no C program for fibers there."""
    spec = load("stackrnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    hp = prog.host_program
    monkeypatch.setattr("sys.version_info", (3, 14, 0, "final", 0))
    assert generate_host_c(prog.module, hp.fibers, 0, False, hp.weight_values) is None


# a read first (so a flush executes nodes before anything else), then a recursion of a
# plain host function on the fiber's stack: n frames deep
DEEP_AFTER_READ = """H = Size("H", 2)

def count(x: Tensor[H], n: int) -> Tensor[H]:
    if n == 0:
        return x
    return tanh(count(x, n - 1))

def main(x: Tensor[H], n: int) -> Tensor[H]:
    if item(x[0:1]) > -1000.0:
        return count(x, n)
    return x
"""


@needs_native
@pytest.mark.parametrize("depth", [3_500, MAX_C_DEPTH + 100, 30_000])
def test_a_fiber_too_deep_for_c_after_a_flush_runs_again_in_python(depth):
    """Past what the fiber's stack holds (a few thousand frames of this function; its
    check stops the C program well before the stack's end), the C run stops after its
    first flush executed nodes, and the run starts over with the Python program: the
    statistics count one run's nodes, and the values are the Python program's."""
    module = acrobat.parse(DEEP_AFTER_READ)
    prog = acrobat.compile(module, acrobat.init_params(module))
    assert prog.taint.fiber_functions and prog.host_program.c_source is not None
    xs = [(np.full(2, 0.1, np.float32), 3), (np.full(2, 0.2, np.float32), depth)]
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert "RecursionError: host program too deep for a fiber's stack" in c.stats.host_code
    assert "the python program ran from the start" in c.stats.host_code
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    for key in ("nodes", "launches", "passes"):
        assert c.stats[key] == py.stats[key], key
    shallow = run(prog, xs[:1], "1")
    assert shallow.stats.host_code == "c"


FAILING_FIBER = """H = Size("H", 2)
V = Size("V", 5)
W: Param[V, H]

def main(x: Tensor[H], n: int) -> Tensor[H]:
    if item(x[0:1]) > -1000.0:
        if 10 // n < 20:
            return tanh(x) + embed(W, n)
    return x
"""


@needs_native
@pytest.mark.parametrize("bad", [0, 2**70])
def test_fiber_errors_are_the_python_programs(bad):
    """A host failure after a flush (the C run stops, the Python one runs from the start)
    raises the Python program's typed error for the same instance."""
    prog = _same_error_either_way(FAILING_FIBER, bad, "")
    assert prog.taint.fiber_functions


@needs_native
def test_a_flush_that_fails_inside_a_c_fiber_run_raises_its_own_error():
    """What a flush raises (here the memory limit) propagates from the C run as from the
    Python one, and every waiting fiber is released (the next run works)."""
    spec = load("drnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(4, seed=0)
    errors = []
    for mode in ("0", "1"):
        rt = prepare(prog)
        rt.host_c_mode = mode
        try:
            with pytest.raises(acrobat.AcrobatError) as info:
                acrobat.run(prog, xs, strategy="batched", memory_limit=100_000)
            errors.append((type(info.value), str(info.value)))
        finally:
            rt.host_c_mode = None
    assert errors[0] == errors[1]
    assert run(prog, xs, "1").stats.host_code == "c"


@needs_native
def test_the_ucontext_fibers_record_what_the_x86_switch_does():
    """Machines other than x86-64 switch fibers with ucontext: the same source built that
    way runs the same fibers."""
    spec = load("drnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    src = "#define ACROBAT_FIBER_UCONTEXT 1\n" + prog.host_program.c_source
    mod, _ = native.build_extension(src)
    rt = prepare(prog)
    xs = spec.instances(5, seed=3)
    expected, passes = run_passes(prog, xs, "1")
    old = rt.host_c
    rt.host_c = mod
    try:
        got = acrobat.run(prog, xs, policy="acrobat", strategy="batched", trace_level="off")
    finally:
        rt.host_c = old
    assert got.stats.host_code == "c"
    assert values_equal(got.outputs, expected.outputs, rtol=0, atol=0)
    got_passes = [[np.array(r) for r in dfg.records] for dfg in got.stats._dfgs]
    assert len(got_passes) == len(passes)
    for x, y in zip(passes, got_passes):
        assert all(np.array_equal(r, q) for r, q in zip(x, y))


@needs_native
def test_auto_builds_only_once_the_python_program_has_cost_enough(monkeypatch, tmp_path):
    monkeypatch.setenv("ACROBAT_CACHE_DIR", str(tmp_path))  # nothing cached yet
    monkeypatch.delenv("ACROBAT_HOST_C", raising=False)
    spec = load("treelstm", "small")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(3, seed=0)
    monkeypatch.setattr(native, "_extensions", {})
    monkeypatch.setattr(run_mod, "HOST_C_AFTER_MS", 1e9)
    first = run(prog, xs, None)
    assert first.stats.host_code.startswith("python (C build waits")
    monkeypatch.setattr(run_mod, "HOST_C_AFTER_MS", 0.0)
    second = run(prog, xs, None)
    assert second.stats.host_code == "c"
    assert second.stats.jit_ms >= prepare(prog).host_c_ms > 0
    assert values_equal(first.outputs, second.outputs)


@needs_native
def test_a_failed_build_leaves_the_python_program(monkeypatch):
    spec = load("treelstm", "small")
    prog = acrobat.compile(spec.module, spec.params)

    def no_compiler(source, placeholder="@MODULE@"):
        raise OSError("no C compiler (cc/gcc) on PATH")

    monkeypatch.setattr(native, "build_extension", no_compiler)
    res = run(prog, spec.instances(3, seed=0), "1")
    assert res.stats.host_code == "python (no C build: no C compiler (cc/gcc) on PATH)"
    expected = [spec.evaluate(x) for x in spec.instances(3, seed=0)]
    assert values_equal(res.outputs, expected, rtol=1e-4, atol=1e-5)


@needs_native
def test_a_recursion_too_deep_for_c_runs_in_python():
    spec = load("birnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    long = from_list([i % 50 for i in range(MAX_C_DEPTH + 500)])
    xs = [spec.instances(1, seed=0)[0], long]
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert "RecursionError" in c.stats.host_code and "the python program ran" in c.stats.host_code
    assert values_equal(c.outputs, py.outputs)


FAILING = """H = Size("H", 2)
V = Size("V", 5)
W: Param[V, H]

def main(x: Tensor[H], n: int) -> Tensor[H]:
    if 10 // n < 20:
        return tanh(x) + embed(W, n)
    return x
"""


@needs_native
@pytest.mark.parametrize(
    "bad, message",
    [(0, "division or modulo by zero"), (2**70, "does not fit in 64 bits")],
)
def test_errors_are_the_python_programs(bad, message):
    _same_error_either_way(FAILING, bad, message)


@needs_native
def test_the_module_refuses_bad_calls():
    spec = load("treelstm", "small")
    prog = acrobat.compile(spec.module, spec.params)
    mod, _ = native.build_extension(prog.host_program.c_source)
    with pytest.raises(TypeError):
        mod.make(int, ())
    with pytest.raises(TypeError):
        mod.make(AdtValue, (1, 2, 3))  # not the program's weights
    hs = mod.make(AdtValue, tuple(range(len(prog.host_program.weight_values))))
    with pytest.raises(TypeError):
        hs.entry()
    with pytest.raises(TypeError):
        hs.entry(5, 0)  # an int where a tree is due: an error, never a crash
    with pytest.raises(IndexError):
        hs.records(99)


def _drnn_host():
    """DRNN small's compiled host program (a fiber program), a fresh run state of it, and
    its kernels' record widths."""
    spec = load("drnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    mod, _ = native.build_extension(prog.host_program.c_source)
    hs = mod.make(AdtValue, tuple(range(len(prog.host_program.weight_values))))
    hs.start(0, 1000)
    return spec, prog, hs, tuple(prepare(prog, "numpy").widths)


@needs_native
def test_take_all_fills_arrays_that_own_their_memory():
    """A fiber program's flush takes every kernel's rows in one call, into int64 arrays
    alloc makes (no bytearray and memoryview per kernel kept with an untraced run's DFGs:
    StackRNN small b64 then left 1,340 objects for the cycle collector after every run,
    ~100 us), None for a kernel with none."""
    spec, prog, hs, widths = _drnn_host()
    assert hs.take_all(native.new_int64s, widths) == (None,) * len(widths)
    with pytest.raises(TypeError):
        hs.take_all(native.new_int64s)  # no widths
    with pytest.raises(TypeError):
        hs.take_all(native.new_int64s, widths[:-1])  # not one per kernel
    seen: list = []
    real = run_mod.Runtime.flush

    def spy(self, st):
        seen.append(st.arrays)
        return real(self, st)

    run_mod.Runtime.flush = spy
    try:
        c = run(prog, spec.instances(3, seed=1), "1")
    finally:
        run_mod.Runtime.flush = real
    assert c.stats.host_code == "c"
    taken = [a for arrays in seen if arrays is not None for a in arrays if a is not None]
    assert taken, "the C program's flushes took no rows"
    for a in taken:
        assert a.dtype == np.int64 and a.ndim == 2 and a.flags.owndata and len(a)


@needs_native
def test_take_all_joins_twin_groups_as_join_twins_does():
    """With the twin groups, take_all gives what ``Executor.join_twins`` makes of its
    plain take (each group's members' rows in member order, a member column; the members
    empty), flush for flush; groups it cannot join are refused."""
    spec, prog, joined_hs, widths = _drnn_host()
    _, _, plain_hs, _ = _drnn_host()
    rt = prepare(prog, "numpy")
    assert rt.twin_members  # DRNN's first-child and next-sibling steps are twins
    joined, plain = [], []

    def answers(ops, vids):  # every decision "yes": full trees, both members recorded
        return [0.5] * len(vids)

    args = [[0, 1], [2, 3], [4, 5]]
    joined_hs.run_fibers(
        args,
        1,
        lambda: joined.append(joined_hs.take_all(native.new_int64s, widths, rt.twin_members)),
        answers,
    )
    plain_hs.run_fibers(
        args, 1, lambda: plain.append(plain_hs.take_all(native.new_int64s, widths)), answers
    )
    assert len(joined) == len(plain) > 1
    twin_rows = 0
    for got, took in zip(joined, plain):
        want = rt.executor.join_twins(
            [r if r is not None else rt.no_records[k] for k, r in enumerate(took)]
        )
        got = [r if r is not None else rt.no_dfg_records[k] for k, r in enumerate(got)]
        assert len(got) == len(want) == len(widths) + len(rt.twin_members)
        for g, w in zip(got, want):
            assert g.shape == w.shape and np.array_equal(g, w)
        twin_rows += sum(len(g) for g in got[len(widths) :])
    assert twin_rows
    for bad in (((0, 0),), ((0, 99),), ((0,), (0, 2))):  # a kernel twice, out of range
        with pytest.raises(ValueError):
            joined_hs.take_all(native.new_int64s, widths, bad)
    with pytest.raises(TypeError):
        joined_hs.take_all(native.new_int64s, widths, [(0, 2)])  # not a tuple


@needs_native
@pytest.mark.parametrize(
    "bad",
    [
        lambda shape: np.empty(shape, np.int32),  # not int64
        lambda shape: np.empty((shape[0], shape[1] + 1), np.int64)[:, 1:],  # not C order
        lambda shape: bytes(8 * shape[0] * shape[1]),  # not writable
        lambda shape: None,  # no buffer at all
    ],
)
def test_take_all_refuses_what_it_cannot_fill(bad):
    spec, prog, hs, widths = _drnn_host()
    took = []

    def flush():
        took.append(hs.take_all(bad, widths))

    with pytest.raises((ValueError, TypeError, BufferError)):
        hs.run_fibers([[0, 1], [2, 3]], 1, flush, lambda ops, vids: [0.5] * len(vids))
    assert took == []  # the first flush's take raised
    assert hs.callback_failed()


def test_fiber_programs_are_emitted_with_their_fibers():
    spec = load("stackrnn", "small")
    prog = acrobat.compile(spec.module, spec.params)
    hp = prog.host_program
    assert hp.fibers
    src = generate_host_c(prog.module, hp.fibers, 0, False, hp.weight_values)
    assert "fiber_read(st, " in src and "#define ENTRY_FIBER t_main" in src


@needs_native
def test_the_disk_cache_keeps_the_newest_generated_modules(monkeypatch, tmp_path):
    monkeypatch.setenv("ACROBAT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "MAX_GENERATED", 2)
    monkeypatch.setattr(native, "_extensions", {})
    spec = load("treelstm", "small")
    source = acrobat.compile(spec.module, spec.params).host_program.c_source
    names = []
    for i in range(4):
        mod, ms = native.build_extension(source + f"\n/* variant {i} */\n")
        assert ms > 0 and mod.make is not None
        names.append(mod.__name__)
        time.sleep(0.02)  # distinct modification times
    left = sorted(p.name for p in tmp_path.iterdir())
    # each kept module with its checksum and its lock file; no .c left
    assert len(left) == 6 and all(p.startswith(tuple(names[2:])) for p in left)
    assert native.extension_cached(source + "\n/* variant 3 */\n")
    assert not native.extension_cached(source + "\n/* variant 9 */\n")


@needs_native
@pytest.mark.parametrize("name", ["birnn", "drnn"])
def test_threads_running_one_compiled_module_at_once_get_their_own_results(name):
    """A runtime runs one batch at a time (its arenas are its own), but runtimes of the
    same program share one built module: each run's state is its own object (a fiber
    program's fibers too, while the threads take turns inside their flushes)."""
    import threading

    spec = load(name, "small")
    progs = [acrobat.compile(spec.module, spec.params) for _ in range(4)]
    batches = [spec.instances(4, seed=s) for s in range(4)]
    expected = [run(p, xs, "0").outputs for p, xs in zip(progs, batches)]
    for p in progs:
        prepare(p).host_c_mode = "1"
    got: dict[int, list] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(3):
                res = acrobat.run(progs[i], batches[i], strategy="batched", trace_level="off")
                assert res.stats.host_code == "c"
                got[i] = res.outputs
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len({prepare(p).host_c for p in progs}) == 1  # one module for the one source
    for i in range(4):
        assert values_equal(got[i], expected[i], rtol=1e-5, atol=1e-6)
