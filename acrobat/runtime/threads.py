"""BLAS threads per kernel launch, decided from the work size and the machine.

NumPy's BLAS (OpenBLAS, MKL, BLIS, ...) runs every GEMM on all its threads by default.
For the small GEMMs of a dynamic model that is a loss: the threads synchronize for
microseconds of work, and when anything else uses a core, a descheduled BLAS thread
stalls the others at their barrier (measured here: a 64x512x1280 GEMM took 0.9 ms on
one thread and 21 ms on two, with one other process busy on this 2-core machine).

The policy (``threads=None``, the default, "auto"):

* a launch whose work — the kernel's FLOPs per instance times the batch size — is below
  :data:`SMALL_WORK_FLOPS` runs single-threaded;
* a larger one may use ``max`` threads: the BLAS's own thread count, less one per core
  that other processes keep busy (their CPU share, read from ``/proc/stat`` over the
  most recent window of :data:`SAMPLE_SECONDS` or more, minus this process's own CPU
  time);
* the setting changes only when the decision differs from the current one (a switch
  costs about a microsecond through ``threadpoolctl``'s library controller), and the
  BLAS is left as it was found when the run ends.

A user forces a count with ``acrobat.run(..., threads=N)`` or the environment variable
``ACROBAT_THREADS=N`` (``threads=`` wins; ``ACROBAT_THREADS=auto`` is the default
policy). The run's :class:`~acrobat.runtime.run.RunStats` say which BLAS ran, the most
and fewest threads a launch used, how many switches the run made and why
(``blas``, ``blas_threads``, ``blas_threads_min``, ``thread_switches``, ``threads``).
Without ``threadpoolctl`` or a BLAS it controls, nothing is switched and ``blas`` says so.
"""

from __future__ import annotations

import math
import os
import time

import numpy  # noqa: F401  (loads the BLAS, so that threadpoolctl finds it)

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # a dependency, but the runtime works without it (no thread control)
    ThreadpoolController = None

ENV = "ACROBAT_THREADS"

# A launch below this many FLOPs runs on one thread (auto policy). Measured on this
# repository's 2-core machine (OpenBLAS 0.3.31, quiet, 1 vs 2 threads interleaved): below
# ~1e6 FLOPs OpenBLAS stays on one thread by itself; at ~2e6 two threads are 14-17% slower
# (16x256x256, 16x128x512: synchronization); from ~4e6 on they win (8x256x1280: 0.68x the
# time, >= 2e7: 0.52-0.62x). With one busy process beside it, two threads lost up to 24x
# (64x512x1280: 21 ms against 0.9 ms), hence the cores-taken rule below.
SMALL_WORK_FLOPS = 4e6
# How often (at most) the load of other processes is re-read: the shortest window it is
# averaged over (``/proc/stat`` counts in 10 ms ticks, so much shorter windows are noise).
SAMPLE_SECONDS = 0.05
# Another process's share of a core above this counts as a core taken.
CORE_TAKEN = 0.2


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
    window of at least that length."""

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
        return sum(vals) - idle, sum(vals), t.user + t.system, running

    def estimate(self, ncpu: int) -> float:
        now = time.monotonic()
        if self.t is not None and now - self.t < SAMPLE_SECONDS:
            return self.cores
        sample = self._read()
        if sample is None:
            return 0.0
        busy, total, own, running = sample
        if self.t is None:  # first look: the tasks running right now, less this one
            self.cores = float(max(0, running - 1))
        else:
            d_total = total - self.prev[1]
            wall = now - self.t
            if d_total > 0 and wall > 0:
                busy_cores = (busy - self.prev[0]) / d_total * ncpu
                own_cores = (own - self.prev[2]) / wall
                self.cores = max(0.0, busy_cores - own_cores)
        self.t, self.prev = now, sample
        return self.cores


_OTHERS = _OthersLoad()


def resolve(threads: int | None) -> tuple[int | None, str]:
    """A user's setting: ``threads=`` if given, else ``ACROBAT_THREADS``; returns the
    forced count (``None``: auto) and where it came from."""
    if threads is not None:
        if int(threads) < 1:
            raise ValueError(f"threads must be >= 1 or None (auto), got {threads!r}")
        return int(threads), f"threads={int(threads)}"
    env = os.environ.get(ENV, "").strip().lower()
    if env and env != "auto":
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{ENV} must be a positive integer or 'auto', got {env!r}")
        return n, f"{ENV}={n}"
    return None, "auto"


def describe() -> str:
    """The policy in one line (for benchmark output)."""
    b = blas()
    forced, why = resolve(None)
    if forced is not None:
        return f"{b.name}: {forced} thread(s) ({why})"
    return (
        f"{b.name}: auto, 1 thread below {SMALL_WORK_FLOPS:.0e} FLOPs per launch, else up "
        f"to {b.default} less cores other processes keep busy"
    )


class ThreadPlan:
    """The thread decision of one prepared program: per kernel, the batch size from
    which a launch may use more than one thread. :meth:`begin` starts a run,
    :meth:`launch` is called before every launch, :meth:`end` restores the BLAS."""

    def __init__(self, kernel_flops: list[int], active: bool = True):
        self.host = active  # the backend's kernels call the host BLAS
        self.blas = blas() if active else None
        self.active = active and bool(self.blas.libs)
        # smallest batch whose work reaches SMALL_WORK_FLOPS (never, for zero-FLOP kernels)
        self.big_from = [
            math.ceil(SMALL_WORK_FLOPS / f) if f > 0 else 1 << 62 for f in kernel_flops
        ]
        self.small = self.big = self.found = 1
        self.used_min = self.used_max = self.switches = 0
        self.why = ""

    def begin(self, threads: int | None) -> None:
        """Decide this run's thread counts for small and large launches."""
        forced, why = resolve(threads)
        self.used_min, self.used_max, self.switches = 1 << 30, 0, 0
        if not self.active:
            self.why = "no BLAS thread control" if self.host else "not a host-BLAS backend"
            return
        b = self.blas
        self.found = b.current = b.get()
        if forced is not None:
            self.small = self.big = forced
            self.why = f"forced {forced} ({why})"
            return
        ncpu = min(cpus(), b.default)
        others = _OTHERS.estimate(cpus())
        taken = math.ceil(others - CORE_TAKEN) if others > CORE_TAKEN else 0
        self.small, self.big = 1, max(1, ncpu - taken)
        self.why = (
            f"auto: 1 below {SMALL_WORK_FLOPS:.0e} FLOPs per launch, else {self.big} "
            f"(BLAS default {b.default}, others busy {others:.1f} cores)"
        )

    def launch(self, kernel: int, n: int) -> None:
        """Set the threads for launching ``kernel`` on a batch of ``n``."""
        if not self.active:
            return
        t = self.big if n >= self.big_from[kernel] else self.small
        b = self.blas
        if t != b.current:
            b.set(t)
            self.switches += 1
        if t < self.used_min:
            self.used_min = t
        if t > self.used_max:
            self.used_max = t

    def end(self) -> tuple[int, int, int]:
        """Restore the BLAS; returns (most, fewest threads a launch used, switches)."""
        if self.active:
            self.blas.set(self.found)
            # close the load window here, so that the next run's begin() judges the time
            # since this run ended (when that is long enough) rather than this run too
            _OTHERS.estimate(cpus())
        if self.used_max == 0:
            return 0, 0, self.switches
        return self.used_max, self.used_min, self.switches
