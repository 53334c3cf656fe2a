"""BLAS threads per launch (acrobat/runtime/threads.py): the decisions, forcing them, the
statistics, and that outputs do not depend on them. No timing."""

from __future__ import annotations

import pytest

import acrobat
from acrobat import native
from acrobat.runtime import threads
from acrobat.runtime.threads import ENV, ThreadPlan, resolve
from tests.runtime.helpers import assert_outputs_equal, batch, program


class FakeLib:
    """A BLAS controller that records the settings it was given."""

    user_api = "blas"

    def __init__(self, n: int):
        self.n, self.log = n, []

    def get_num_threads(self) -> int:
        return self.n

    def set_num_threads(self, n: int) -> None:
        self.n = n
        self.log.append(n)


class FakeBlas(threads._Blas):
    def __init__(self, default: int):
        self.lib = FakeLib(default)
        self.libs, self.name, self.default = [self.lib], "fake 1.0 (pthreads)", default
        self.current = self.get()


@pytest.fixture
def fake(monkeypatch):
    """A 4-thread fake BLAS on 4 CPUs with no other load; returns a setter for the load."""
    blas = FakeBlas(4)
    monkeypatch.setattr(threads, "_BLAS", blas)
    monkeypatch.setattr(threads, "cpus", lambda: 4)
    monkeypatch.delenv(ENV, raising=False)
    others = {"cores": 0.0}
    monkeypatch.setattr(threads._OTHERS, "estimate", lambda ncpu: others["cores"])
    return blas, others


def test_resolve_argument_env_and_errors(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert resolve(None) == (None, "auto")
    assert resolve(3) == (3, "threads=3")
    monkeypatch.setenv(ENV, "2")
    assert resolve(None) == (2, f"{ENV}=2")
    assert resolve(1) == (1, "threads=1")  # the argument wins
    monkeypatch.setenv(ENV, "auto")
    assert resolve(None) == (None, "auto")
    for bad in ("0", "many", "-1"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(acrobat.AcrobatError, match=ENV):
            resolve(None)
    with pytest.raises(acrobat.AcrobatError):
        resolve(0)


def test_auto_uses_the_cores_others_leave(fake):
    blas, others = fake
    plan = ThreadPlan()
    for cores, expect in [(0.0, 4), (0.25, 4), (0.5, 3), (1.0, 3), (1.4, 2), (3.9, 1), (8.0, 1)]:
        others["cores"] = cores
        plan.begin(None)
        assert blas.lib.n == expect, cores
        assert plan.end() == expect and blas.lib.n == 4  # restored as found
        assert plan.why.startswith(f"auto: {expect} of 4")
    assert blas.lib.log.count(4) == 5  # set (and restored) only when it differed


def test_forced_counts(fake, monkeypatch):
    blas, others = fake
    others["cores"] = 3.0
    plan = ThreadPlan()
    plan.begin(2)
    assert blas.lib.n == 2 and plan.end() == 2 and plan.why == "forced 2 (threads=2)"
    monkeypatch.setenv(ENV, "3")
    plan.begin(None)
    assert blas.lib.n == 3 and plan.end() == 3 and ENV in plan.why
    assert blas.lib.n == 4


def test_own_threads_take_the_products_and_the_blas_runs_on_one(fake):
    blas, others = fake
    if native.load() is None:
        pytest.skip(f"native kernel unavailable here: {native.status()}")
    plan = ThreadPlan(own=True, native=native)
    try:
        plan.begin(None)  # quiet: the products on the native kernel's two threads
        assert blas.lib.n == 1 and native.two_threads()
        assert plan.why == (
            "auto: 4 of 4 (others busy 0.0 of 4 cores); "
            "products on acrobat's two native threads, the BLAS on one"
        )
        assert plan.end() == 4 and blas.lib.n == 4 and not native.two_threads()
        others["cores"] = 2.5  # three cores taken, one free: still acrobat's two threads
        plan.begin(None)
        assert blas.lib.n == 1 and native.two_threads()
        assert plan.why == (
            "auto: 2 of 4 (others busy 2.5 of 4 cores; the BLAS rule alone gives 1: two "
            "kept, a core is free); products on acrobat's two native threads, the BLAS on one"
        )
        assert plan.end() == 2 and blas.lib.n == 4
        others["cores"] = 3.9  # every core busy: one thread, the BLAS's
        plan.begin(None)
        assert blas.lib.n == 1 and not native.two_threads() and "native" not in plan.why
        plan.end()
        plan.begin(2)  # forced two
        assert blas.lib.n == 1 and native.two_threads()
        assert plan.end() == 2 and blas.lib.n == 4
    finally:
        native.set_threads(threads.blas().get() or 1)


def own(prog) -> bool:
    """Whether ``prog``'s products go to the native kernel's threads (its packable ones)."""
    return threads.own_products((k.function for k in prog.kernels.values()), native.packable)


def test_which_programs_give_their_products_to_own_threads():
    # dense by weights (the native kernel's) -> own; attention/matrix products -> BLAS
    for model, want in [("treelstm", True), ("birnn", True), ("drnn", True)]:
        assert own(program(model)) is want
    for model in ("berxit", "mvrnn"):
        spec = acrobat.models.load(model, size="tiny")
        prog = acrobat.compile(spec.module, spec.params)
        assert not own(prog), model
    assert not threads.own_products([], native.packable)  # no products at all: nothing to give


def test_inactive_plan_switches_nothing(fake):
    blas, _ = fake
    plan = ThreadPlan(active=False)
    plan.begin(None)
    assert plan.end() == 0 and blas.lib.log == []
    assert plan.why == "not a host-BLAS backend"


def test_no_controllable_blas(monkeypatch):
    blas = FakeBlas(2)
    blas.libs, blas.name = [], "none"
    monkeypatch.setattr(threads, "_BLAS", blas)
    plan = ThreadPlan()
    plan.begin(None)
    assert plan.end() == 0 and plan.why == "no BLAS thread control"


def test_run_records_the_threads_and_outputs_do_not_change():
    xs, refs = batch("treelstm", 5, 0)
    prog = program("treelstm")
    before = threads.blas().get()
    results = {t: acrobat.run(prog, xs, threads=t) for t in (None, 1, 2)}
    assert threads.blas().get() == before  # the BLAS is left as found
    for t, res in results.items():
        assert_outputs_equal(res.outputs, refs, f"threads={t}")
        s = res.stats
        assert s.blas == threads.blas().name and s.threads
        if threads.blas().libs:
            assert s.blas_threads >= 1
            if t is not None:
                assert s.blas_threads == t and s.threads.startswith(f"forced {t} (threads={t})")
        own = "products on acrobat's two native threads, the BLAS on one"
        # TreeLSTM's products are all dense by weights: given two threads, they are its
        assert (own in s.threads) == (s.blas_threads >= 2 and native.load() is not None)


def test_env_var_forces_a_run(monkeypatch):
    if not threads.blas().libs:
        pytest.skip("no BLAS that threadpoolctl controls")
    monkeypatch.setenv(ENV, "1")
    xs, _ = batch("treelstm", 3, 0)
    s = acrobat.run(program("treelstm"), xs).stats
    assert s.blas_threads == 1 and ENV in s.threads


def test_bad_threads_argument_raises():
    xs, _ = batch("treelstm", 2, 0)
    with pytest.raises(acrobat.AcrobatError, match="threads must be"):
        acrobat.run(program("treelstm"), xs, threads=0)


def test_load_estimate_is_a_number_of_cores():
    # the real sampler, twice (the second within the window keeps the estimate)
    est = threads._OthersLoad()
    a = est.estimate(threads.cpus())
    b = est.estimate(threads.cpus())
    assert a >= 0.0 and b == a


def test_the_load_estimate_is_at_most_the_tasks_running_now(monkeypatch):
    """Other processes' load is the window's /proc/stat average, but at most the tasks
    running now that are not this process's threads: a process that ran in the window
    and has stopped is not busy now, and a task caught running for an instant in a
    quiet window is not a busy neighbour."""
    now = [100.0]
    samples = []
    monkeypatch.setattr(threads.time, "monotonic", lambda: now[0])
    # /proc/stat as it reads now (the estimate reads it again around listing our threads)
    monkeypatch.setattr(threads._OthersLoad, "_read", staticmethod(lambda: samples[-1]))
    monkeypatch.setattr(threads, "_own_running", lambda: 2)  # this thread and a BLAS worker
    est = threads._OthersLoad()
    samples.append((0.0, 0.0, 0.0, 3))  # busy ticks, all ticks, own CPU s, procs_running
    assert est.estimate(2) == 1.0  # first look: 3 running, 2 of them ours
    now[0] += 0.1  # another process kept one of two cores busy, and runs now
    samples.append((10.0, 20.0, 0.0, 3))
    assert est.estimate(2) == pytest.approx(1.0)
    now[0] += 0.1  # it kept a core busy in the window, but has stopped
    samples.append((20.0, 40.0, 0.0, 2))
    assert est.estimate(2) == 0.0
    now[0] += 0.1  # a quiet window and a task caught running for an instant
    samples.append((20.0, 60.0, 0.0, 3))
    assert est.estimate(2) == 0.0


def test_with_only_the_reader_running_our_threads_are_not_listed(monkeypatch):
    """``procs_running`` of 1 is the reading thread itself: nothing else runs now, so the
    estimate lists no thread of this process's (two listings of /proc/self/task, ~130 us);
    with more running it does, around a second read of /proc/stat."""
    now = [100.0]
    reads, listed = [], []
    sample = [(0.0, 0.0, 0.0, 1)]
    monkeypatch.setattr(threads.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(
        threads._OthersLoad, "_read", staticmethod(lambda: reads.append(1) or sample[0])
    )
    monkeypatch.setattr(threads, "_own_running", lambda: listed.append(1) or 1)
    est = threads._OthersLoad()
    assert est.estimate(2) == 0.0
    assert (len(reads), len(listed)) == (1, 0)
    now[0] += 0.1  # a window in which another process kept a core busy, and runs now
    sample[0] = (10.0, 20.0, 0.0, 2)
    assert est.estimate(2) == pytest.approx(1.0)
    assert (len(reads), len(listed)) == (3, 2)
    now[0] += 0.1  # it has stopped: only the reader runs
    sample[0] = (20.0, 40.0, 0.0, 1)
    assert est.estimate(2) == 0.0
    assert (len(reads), len(listed)) == (4, 2)


def test_processes_that_take_turns_are_not_load(monkeypatch):
    """A benchmark's peer worker runs only while this process waits for it: its CPU time
    and its running threads count as this process's own, so a turn that has just ended
    (in the load window) or a worker caught running does not take a BLAS thread away."""
    cpu = {4242: 1.0}  # the worker's CPU seconds so far
    running = {"self": 1, "4242": 1}
    monkeypatch.setattr(threads._TurnTakers, "_cpu_of", lambda self, pid: cpu.get(pid))
    monkeypatch.setattr(threads, "_running_threads", lambda pid: running[pid])
    turns = threads._TurnTakers()
    monkeypatch.setattr(threads, "_TURNS", turns)
    assert threads._own_running() == 1
    threads.take_turns(4242)
    assert turns.cpu() == 0.0  # counted from when it started taking turns
    assert threads._own_running() == 2  # its running thread is ours
    cpu[4242] = 1.5
    assert turns.cpu() == pytest.approx(0.5)
    threads.stop_taking_turns(4242)
    cpu[4242] = 9.0  # what it does afterwards is not ours
    assert turns.cpu() == pytest.approx(0.5) and threads._own_running() == 1

    # the load window's own CPU time (``_read``) includes a turn-taker's
    threads.take_turns(4242)
    own = threads._OthersLoad._read()[2]
    cpu[4242] = 10.0  # a 1-second turn
    assert threads._OthersLoad._read()[2] - own == pytest.approx(1.0, abs=0.05)
