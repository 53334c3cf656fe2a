"""BLAS threads per run, decided from the machine's load; the work size is left to the BLAS.

NumPy's BLAS (OpenBLAS here) runs every GEMM on all its threads by default. When anything
else uses a core, a descheduled BLAS thread stalls the others at their barrier: measured on
this repository's 2-core machine with one busy process beside it, a 64x512x1280 GEMM took
0.9 ms on one thread and 21 ms on two, and TreeLSTM small b64 went from 37 ms (quiet, two
threads) to a 114 ms median and 358 ms worst (busy, two threads) against 52 ms on one.

The policy (``threads=None``, the default, "auto"), decided at the start of every run:
the BLAS's thread count as found (its default, or a limit the caller set), less one thread per core that other processes keep busy
(their CPU share from ``/proc/stat`` over the most recent window of
:data:`SAMPLE_SECONDS` or more, minus this process's own CPU time, and at most the tasks
running now that are not this process's; a core counts as taken above :data:`CORE_TAKEN`). The setting is changed only when it differs (a switch through
``threadpoolctl``'s library controller costs about a microsecond; ``threadpool_limits``
re-scans the libraries and costs about 230 us) and the BLAS is left as it was found when
the run ends. Except for programs whose products run on acrobat's own two threads
(:class:`ThreadPlan` ``own``): those keep two threads while other processes leave at least
one core free, because a product's pieces there are small (~4e6 multiply-adds) and a piece
whose helper a busy core holds up is taken back by the caller (acrobat/native/smallgemm.c),
and the helper keeps off the caller's CPU. Measured on the 2-core machine with one busy
process pinned to a core (``python -m acrobat.bench load-test --threads auto 1 2
--repeats 15``), TreeLSTM small b64's busy median was 1.38x its quiet one on two threads
(33.7 vs 24.4 ms) where one thread took 1.65x (40.3 ms).

Work size: small GEMMs do not pay thread synchronization because the BLAS already runs
them on one thread (OpenBLAS below about 2.6e5 multiply-adds per GEMM, and with fewer
threads as the size grows). Switching per launch was measured and lost: with a work
threshold per kernel launch (4e6, 1e6 or 2.5e5 FLOPs), quiet runs were 0-15% slower than
leaving two threads on (e.g. StackRNN large b64 96 vs 83 ms with 111-242 switches,
NestedRNN large b8 28 vs 25.5 ms), because a switch wakes parked BLAS workers (~5 us per
switch pair measured) and the band where one thread beats two (about 1e6-4e6 FLOPs) gains
only a few microseconds per launch, inconsistently.

A user forces a count with ``acrobat.run(..., threads=N)`` or the environment variable
``ACROBAT_THREADS=N`` (``threads=`` wins; ``ACROBAT_THREADS=auto`` is the default
policy). The run's :class:`~acrobat.runtime.run.RunStats` say which BLAS ran, with how
many threads, and why (``blas``, ``blas_threads``, ``threads``). Without
``threadpoolctl`` or a BLAS it controls, nothing is switched and ``threads`` says so.
"""

from __future__ import annotations

import math
import os
import time

import numpy  # noqa: F401  (loads the BLAS, so that threadpoolctl finds it)

from acrobat.errors import AcrobatError
from acrobat.ir.nodes import OpCall, ParamRef
from acrobat.ir.ops import op_flops
from acrobat.ir.traversal import walk

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # a dependency, but the runtime works without it (no thread control)
    ThreadpoolController = None

ENV = "ACROBAT_THREADS"

# How often (at most) the load of other processes is re-read: the shortest window it is
# averaged over (``/proc/stat`` counts in 10 ms ticks, so much shorter windows are noise).
SAMPLE_SECONDS = 0.05
# The window's average alone is not enough: a process that ran in it and has stopped (in a
# benchmark round, a DyNet worker that had finished its turn) made the next acrobat run drop
# to one thread, 225 against 173 ms on TreeLSTM large b64. So the estimate is at most the
# tasks running right now: a neighbour busy throughout shows in both, one that has stopped
# only in the window, and a task caught running for an instant only in the count.
# Other processes' load above this many cores takes a core (rounded up past it). A quiet
# 2-core machine here reads 0.0-0.2 cores of others (kernel threads, idle helpers); one
# busy process reads 0.5-1.5 (the 50 ms windows are coarse).
CORE_TAKEN = 0.3


class _Blas:
    """The process's BLAS libraries (found once, when first needed) and their thread count."""

    def __init__(self) -> None:
        self.libs: list = []
        self.name = "none"
        self.default = 1
        try:
            found = ThreadpoolController().lib_controllers if ThreadpoolController else []
        except Exception:  # threadpoolctl cannot inspect this process
            found = []
        self.libs = [c for c in found if c.user_api == "blas"]
        if self.libs:
            self.name = ", ".join(
                f"{c.internal_api} {c.version or '?'} ({c.threading_layer})" for c in self.libs
            )
            self.default = max(int(c.num_threads or 1) for c in self.libs)
        self.current = self.get()

    def get(self) -> int:
        """The thread count now (the largest over the libraries)."""
        if not self.libs:
            return 1
        return max(int(c.get_num_threads() or 1) for c in self.libs)

    def set(self, n: int) -> None:
        if n != self.current:
            for c in self.libs:
                c.set_num_threads(n)
            self.current = n


_BLAS: _Blas | None = None


def blas() -> _Blas:
    """The process's BLAS facts and controller (made on first call)."""
    global _BLAS
    if _BLAS is None:
        _BLAS = _Blas()
    return _BLAS


def cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _OthersLoad:
    """How many cores other processes keep busy, from ``/proc/stat`` deltas minus this
    process's own CPU time. Read at the start and end of each run; a read updates the
    estimate once the window since the last update is :data:`SAMPLE_SECONDS` or more
    (shorter windows keep accumulating), so the estimate covers the most recent
    window of at least that length. At the first read it counts the tasks running now
    that are not this process's threads (``procs_running`` less this process's running
    threads, which include a BLAS worker still spinning after its last product); later,
    the smaller of the window's average and that count. Processes declared with
    :func:`take_turns` count as this process's own, CPU time and running threads."""

    def __init__(self) -> None:
        self.t = None
        self.cores = 0.0  # the last estimate

    @staticmethod
    def _read() -> tuple[float, float, float, int] | None:
        try:
            with open("/proc/stat") as f:
                head = f.readline().split()
                running = 0
                for line in f:
                    if line.startswith("procs_running"):
                        running = int(line.split()[1])
                        break
        except (OSError, ValueError):
            return None
        vals = [float(v) for v in head[1:9]]
        idle = vals[3] + vals[4]
        t = os.times()
        return sum(vals) - idle, sum(vals), t.user + t.system + _TURNS.cpu(), running

    def estimate(self, ncpu: int) -> float:
        now = time.monotonic()
        if self.t is not None and now - self.t < SAMPLE_SECONDS:
            return self.cores
        sample = self._read()
        if sample is None:
            return 0.0
        if sample[3] <= 1:  # only the reader runs: no other task (nor thread of ours) now
            others_now = 0.0
        else:
            # this process's running threads, counted around a read of ``procs_running``:
            # a BLAS worker that stops spinning between the two reads would otherwise
            # count as another process. (Listed only when something else runs: the two
            # listings of /proc/self/task cost ~130 us, a read of /proc/stat ~40.)
            mine = _own_running()
            sample = self._read()
            if sample is None:
                return 0.0
            others_now = float(max(0, sample[3] - max(mine, _own_running())))
        busy, total, own, running = sample
        if self.t is None:  # first look: the tasks running right now
            self.cores = others_now
        else:
            d_total = total - self.prev[1]
            wall = now - self.t
            if d_total > 0 and wall > 0:
                busy_cores = (busy - self.prev[0]) / d_total * ncpu
                own_cores = (own - self.prev[2]) / wall
                self.cores = max(0.0, busy_cores - own_cores)
            self.cores = min(self.cores, others_now)
        self.t, self.prev = now, sample
        return self.cores


def _running_threads(pid: str) -> int:
    """Threads of process ``pid`` (``"self"`` or a number) in state R (running or
    runnable); 0 when it cannot be read (gone, or no ``/proc``)."""
    n = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            n += stat[stat.rindex(")") + 2] == "R"
    except (OSError, ValueError):
        pass
    return n


def _own_running() -> int:
    """This process's threads in state R, at least 1 (this one), plus those of the
    processes that take turns with it (:func:`take_turns`)."""
    return max(_running_threads("self"), 1) + sum(_running_threads(str(p)) for p in _TURNS.pids)


class _TurnTakers:
    """Processes that only run while this one waits for them (a benchmark's peer
    workers: each runs one timed pass when asked, and is idle otherwise). Their CPU time
    and running threads count as this process's own, not as load: without that, a peer's
    turn that had just ended sat in the load window, and the next acrobat run dropped to
    one thread (BiRNN small b64 in the grid: 15-17 ms on one thread against 12.4-13.8
    standalone on two)."""

    def __init__(self) -> None:
        self.pids: dict[int, float] = {}  # pid -> its CPU seconds when it started taking turns
        self.done = 0.0  # CPU seconds of the processes that no longer take turns
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def _cpu_of(self, pid: int) -> float | None:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime
        except (OSError, ValueError, IndexError):
            return None

    def add(self, pid: int) -> None:
        self.pids[pid] = self._cpu_of(pid) or 0.0

    def remove(self, pid: int) -> None:
        start = self.pids.pop(pid, None)
        if start is not None:
            now = self._cpu_of(pid)
            self.done += max(0.0, (now if now is not None else start) - start)

    def cpu(self) -> float:
        """CPU seconds they used since they started taking turns (cumulative, like
        ``os.times()``: the load window takes differences)."""
        total = self.done
        for pid, start in self.pids.items():
            now = self._cpu_of(pid)
            if now is not None:
                total += max(0.0, now - start)
        return total


_TURNS = _TurnTakers()


def take_turns(pid: int) -> None:
    """Declare process ``pid`` a turn-taker: it runs only while this process waits for
    it, so the thread rule does not count it as another busy process."""
    _TURNS.add(pid)


def stop_taking_turns(pid: int) -> None:
    """Undo :func:`take_turns` (before the process exits or starts running on its own)."""
    _TURNS.remove(pid)


_OTHERS = _OthersLoad()


def resolve(threads: int | None) -> tuple[int | None, str]:
    """A user's setting: ``threads=`` if given, else ``ACROBAT_THREADS``; returns the
    forced count (``None``: auto) and where it came from."""
    if threads is not None:
        if int(threads) < 1:
            raise AcrobatError(
                f"threads must be a count >= 1 or None, got {threads!r}",
                hint="None lets the runtime choose (see acrobat/runtime/threads.py)",
            )
        return int(threads), f"threads={int(threads)}"
    env = os.environ.get(ENV, "").strip().lower()
    if env and env != "auto":
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise AcrobatError(
                f"{ENV} must be a positive integer or 'auto', got {env!r}",
                hint=f"unset {ENV} to let the runtime choose",
            )
        return n, f"{ENV}={n}"
    return None, "auto"


def describe() -> str:
    """The policy in one line (for benchmark output)."""
    b = blas()
    forced, why = resolve(None)
    if forced is not None:
        return f"{b.name}: {forced} thread(s) ({why})"
    return f"{b.name}: auto, {b.default} threads less one per core other processes keep busy"


class ThreadPlan:
    """The thread decision of one prepared program: :meth:`begin` sets the run's count,
    :meth:`end` restores the BLAS and says what ran.

    ``own`` (a program whose products are nearly all ones the native kernel takes, see
    :func:`own_products`): a run given two threads or more runs those products on the
    native kernel's two threads (:mod:`acrobat.native`) and the BLAS on one. Not both:
    the BLAS's worker threads spin for about 0.1 s after each multi-threaded call
    (measured here: a process's CPU time grew 0.1 s during a 1 s sleep after one 512^3
    product), so a BLAS on two threads and acrobat's helper thread would each take the
    other's core. The native kernel on two threads matched OpenBLAS on two at 64-2048
    rows (512 x 512 to 1024 x 2560 weights) and beat it at fewer rows, where it runs
    without packing; see docs/architecture.md, "Small GEMMs", for the models."""

    def __init__(self, active: bool = True, own: bool = False, native=None):
        # the engine's native products' thread rule (set_threads), or None: none
        self.native = native
        self.host = active  # the backend's kernels call the host BLAS
        self.blas = blas() if active else None
        self.active = active and bool(self.blas.libs)
        self.own = own and self.active and native is not None
        self.found = self.used = 0
        self.why = ""

    def begin(self, threads: int | None) -> None:
        """Decide and set this run's thread count."""
        forced, why = resolve(threads)
        self.used = 0
        if not self.active:
            self.why = "no BLAS thread control" if self.host else "not a host-BLAS backend"
            return
        b = self.blas
        self.found = b.current = b.get()
        if forced is not None:
            self.used = forced
            self.why = f"forced {forced} ({why})"
        else:
            ncpu = min(cpus(), self.found)  # a limit the caller set around the run holds
            others = _OTHERS.estimate(cpus())
            taken = math.ceil(others - CORE_TAKEN) if others > CORE_TAKEN else 0
            self.used = max(1, ncpu - taken)
            kept = ""
            if self.own and self.used < 2 <= ncpu and taken < ncpu:
                # acrobat's own two threads lose no more than a piece to a helper that a
                # busy core holds up (the caller takes it back): a core still free is used
                kept = f"; the BLAS rule alone gives {self.used}: two kept, a core is free"
                self.used = 2
            self.why = (
                f"auto: {self.used} of {self.found} "
                f"(others busy {others:.1f} of {cpus()} cores{kept})"
            )
        if self.own and self.used >= 2:
            b.set(1)
            self.native.set_threads(self.used, own=True)
            self.why += "; products on acrobat's two native threads, the BLAS on one"
        else:
            b.set(self.used)
            if self.native is not None:  # which products its one-thread kernel takes
                self.native.set_threads(self.used)

    def end(self) -> int:
        """Restore the BLAS; returns the threads the run's products used (0: none
        controlled): the BLAS's, or two when they ran on the native kernel's threads."""
        if self.active:
            self.blas.set(self.found)
            if self.native is not None:
                self.native.set_threads(self.found)
            # close the load window here, so that the next run's begin() judges the time
            # since this run ended (when that is long enough) rather than this run too
            _OTHERS.estimate(cpus())
        return self.used


OTHER_PRODUCTS = 0.2
"""A program gives its products to acrobat's own threads (:class:`ThreadPlan`) when the
matrix products the native kernel cannot take are at most this share of its product
FLOPs per node: the BLAS runs those on one thread then."""


def own_products(functions, packable) -> bool:
    """Whether the products of kernel ``functions`` (IR) are nearly all ones the native
    kernel takes (``dense`` of a node's vector by a float32 weight of a multiple of 8
    rows): at most :data:`OTHER_PRODUCTS` of their FLOPs per node are other products
    (``matmul``, ``batch_matmul``, ``dense`` of computed weights or of matrices)."""
    taken = other = 0
    for f in functions:
        for e in walk(f.body):
            if not isinstance(e, OpCall) or e.op not in ("dense", "matmul", "batch_matmul"):
                continue
            flops = op_flops(e.op, [a.ty for a in e.args], e.ty, dict(e.attrs))
            x, w = e.args[0], e.args[1]
            if (
                e.op == "dense"
                and isinstance(w, ParamRef)
                and len(x.ty.shape) == 1
                and x.ty.dtype == w.ty.dtype
                and packable(w.ty.shape[::-1], w.ty.dtype)  # the kernel takes W^T
            ):
                taken += flops
            else:
                other += flops
    return taken > 0 and other <= OTHER_PRODUCTS * (taken + other)
