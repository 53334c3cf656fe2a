"""One measurement protocol for every timing acrobat reports (``acrobat.measure``).

The benchmark harness and the explorer compare configurations the same way:

1. warm-up: every configuration runs ``warmup`` times (interleaved, results dropped);
2. ``repeats`` rounds, each running every configuration once, so a burst of load from
   elsewhere hits all of them alike instead of whichever happened to run then; the
   rounds' orders form a balanced Latin square (Williams' design, :func:`round_order`),
   so that each configuration runs right after a different one from round to round:
   whichever runs after a configuration that fills the caches with its own data
   (another process's model, a larger working set) pays for reloading them. Measured:
   1.2-1.4x on TreeLSTM b64 when the order was fixed; and with rounds that only started
   one configuration further on (A B C, B C A, ...: the cyclic order, hence each
   configuration's predecessor, never changes), the grid's acrobat row always followed
   a DyNet worker and TreeLSTM small b8 took 7.97 ms against 6.03 for the dynet-depth
   policy that always followed it, the reverse of their order measured alone;
3. per configuration and metric: median, quartiles (IQR) and min/max (:class:`Spread`);
4. the machine's load during the measurement: ``os.getloadavg`` at the start and end,
   and the CPU busy fraction from ``/proc/stat`` (all processes, and the share not
   spent by this process) (:class:`Load`);
5. a verdict between two configurations (:func:`verdict`): "within noise" when their
   interquartile ranges overlap, else which is faster and by how much;
6. before each run, the threads the previous configuration left running in this process
   go idle first (:func:`settle`, at most ``settle`` seconds): OpenBLAS's workers spin
   about 0.1 s after every multi-threaded product, so a NumPy baseline otherwise took a
   core from whichever configuration ran next (TreeLSTM small b8, acrobat on two
   threads: 4.9 ms interleaved with DyNet alone, 6.1 ms with the NumPy baselines in the
   rounds). Load from other processes is untouched: that is the machine's, and is
   measured (step 4).

Every run is timed on the wall clock (metric ``"wall_ms"``); a configuration whose callable
returns a mapping of numbers (e.g. ``acrobat.run(...).stats``, which holds ``total_ms``,
``exe_ms`` ...) also records those, as further metrics (only the keys listed in
``metrics``, when given). Standard library only.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

WALL = "wall_ms"


@dataclass(frozen=True)
class Spread:
    """Summary of one sample list (milliseconds): median, quartiles, extremes."""

    median: float
    q1: float
    q3: float
    min: float
    max: float
    n: int

    @property
    def iqr(self) -> float:
        """Interquartile range, ``q3 - q1``."""
        return self.q3 - self.q1

    def overlaps(self, other: Spread) -> bool:
        """Whether the interquartile ranges ``[q1, q3]`` of the two overlap."""
        return self.q1 <= other.q3 and other.q1 <= self.q3

    def __str__(self) -> str:
        return (
            f"{self.median:.3g} ms (IQR {self.q1:.3g}..{self.q3:.3g}, "
            f"min {self.min:.3g}, max {self.max:.3g}, n={self.n})"
        )


def spread(samples: Sequence[float]) -> Spread:
    """Median, quartiles (inclusive method: quartiles lie within the samples) and
    min/max of a non-empty sample list."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("spread() needs at least one sample")
    if len(xs) == 1:
        q1 = q3 = xs[0]
    else:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return Spread(statistics.median(xs), q1, q3, xs[0], xs[-1], len(xs))


@dataclass(frozen=True)
class Verdict:
    """How two configurations compare on one metric.

    Attributes:
        a, b: the configurations' names.
        within_noise: their interquartile ranges overlap: no difference can be claimed.
        faster: the name with the smaller median when not within noise, else ``None``.
        ratio: slower median / faster median (>= 1; ``b``'s median / ``a``'s when within
            noise, for reference).
        text: one line saying the above.
    """

    a: str
    b: str
    within_noise: bool
    faster: str | None
    ratio: float
    text: str


def verdict(a: Spread, b: Spread, name_a: str = "A", name_b: str = "B") -> Verdict:
    """ "within noise" when the IQRs overlap, else which is faster and by how much."""
    if a.overlaps(b):
        ratio = b.median / a.median if a.median > 0 else float("inf")
        text = (
            f"{name_a} vs {name_b}: within noise (medians {a.median:.3g} vs "
            f"{b.median:.3g} ms, IQRs overlap)"
        )
        return Verdict(name_a, name_b, True, None, ratio, text)
    fast, slow, fname, sname = (
        (a, b, name_a, name_b) if a.median <= b.median else (b, a, name_b, name_a)
    )
    ratio = slow.median / fast.median if fast.median > 0 else float("inf")
    text = (
        f"{fname} is {ratio:.2f}x faster than {sname} (medians {fast.median:.3g} vs "
        f"{slow.median:.3g} ms, IQRs apart)"
    )
    return Verdict(name_a, name_b, False, fname, ratio, text)


@dataclass(frozen=True)
class Load:
    """The machine's load while measuring.

    Attributes:
        loadavg_start, loadavg_end: 1-minute load average (``os.getloadavg``) before and after.
        cpu_busy: fraction of all CPUs' time that was busy (any process; ``/proc/stat``),
            ``nan`` where ``/proc/stat`` is unreadable.
        other_busy: the part of ``cpu_busy`` not spent by this process (and its children):
            what everything else on the machine used, as a fraction of all CPUs.
        cpus: CPUs the fractions are relative to.
        seconds: wall-clock length of the measurement.
    """

    loadavg_start: float
    loadavg_end: float
    cpu_busy: float
    other_busy: float
    cpus: int
    seconds: float

    def __str__(self) -> str:
        return (
            f"load {self.loadavg_start:.2f}->{self.loadavg_end:.2f}, CPU busy "
            f"{100 * self.cpu_busy:.0f}% ({100 * self.other_busy:.0f}% by others) of "
            f"{self.cpus} CPUs over {self.seconds:.1f} s"
        )


def _proc_stat() -> tuple[float, float] | None:
    """(busy, total) jiffies of all CPUs, or ``None``."""
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()
    except OSError:
        return None
    if not parts or parts[0] != "cpu":
        return None
    vals = [float(v) for v in parts[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user/nice]
    total = sum(vals[:8])
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    return total - idle, total


def _running_threads() -> int | None:
    """Threads of this process in state R (running or runnable), from ``/proc``; None
    where there is no ``/proc``."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    n = 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        n += stat[stat.rindex(")") + 2] == "R"
    return n


def round_order(n: int, r: int) -> list[int]:
    """The order of ``n`` configurations in timed round ``r``: row ``r`` of a balanced
    Latin square (Williams' design: 0, 1, n-1, 2, n-2, ... shifted by ``r``, rows of odd
    ``r`` reversed when ``n`` is odd), so that from round to round each configuration
    follows a different one (every one, over ``n`` rounds, ``2n`` for odd ``n``)."""
    seq, lo, hi = [0], 1, n - 1
    while len(seq) < n:
        seq.append(lo)
        lo += 1
        if len(seq) < n:
            seq.append(hi)
            hi -= 1
    row = [(s + r) % n for s in seq]
    return row[::-1] if n % 2 and r % 2 else row


def settle(timeout: float) -> float:
    """Wait until no thread of this process but the caller is running, at most
    ``timeout`` seconds (a BLAS worker still spinning after the last product; see the
    module docstring, step 6). Returns the seconds waited. It waits busy, reading
    ``/proc`` in a loop: a sleep would leave the core idle, and on this project's
    virtual machine a run that starts on cores idle for 0.1 s took up to twice as long."""
    t0 = time.perf_counter()
    while True:
        n = _running_threads()
        waited = time.perf_counter() - t0
        if n is None or n <= 1 or waited >= timeout:
            return waited


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadProbe:
    """Reads the machine's load at ``start()`` and summarizes it at ``stop()``."""

    def __init__(self) -> None:
        self.cpus = os.cpu_count() or 1

    def start(self) -> LoadProbe:
        self.t0 = time.perf_counter()
        self.la0 = os.getloadavg()[0]
        self.stat0 = _proc_stat()
        self.own0 = _own_cpu_s()
        return self

    def stop(self) -> Load:
        seconds = time.perf_counter() - self.t0
        stat1, own1 = _proc_stat(), _own_cpu_s()
        busy = other = float("nan")
        if self.stat0 and stat1 and stat1[1] > self.stat0[1]:
            d_busy, d_total = stat1[0] - self.stat0[0], stat1[1] - self.stat0[1]
            busy = d_busy / d_total
            # jiffies per CPU-second, from the elapsed total
            own = (own1 - self.own0) / (self.cpus * seconds) if seconds > 0 else 0.0
            other = min(1.0, max(0.0, busy - own))
        return Load(self.la0, os.getloadavg()[0], busy, other, self.cpus, seconds)


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found.

    Attributes:
        names: the configurations, in the order they ran in each round.
        samples: per configuration, per metric, the samples of every repeat (in order).
        load: the machine's load during the repeats (warm-up excluded).
        warmup, repeats: runs of each configuration dropped, and kept.
        results: the last value each configuration's callable returned.
    """

    names: tuple[str, ...]
    samples: Mapping[str, Mapping[str, tuple[float, ...]]]
    load: Load
    warmup: int
    repeats: int
    results: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def spread(self, name: str, metric: str = WALL) -> Spread:
        """The spread of one configuration's metric (``"wall_ms"`` by default)."""
        return spread(self.samples[name][metric])

    def verdict(self, a: str, b: str, metric: str = WALL) -> Verdict:
        """Configuration ``a`` against ``b`` on ``metric`` (see :func:`verdict`)."""
        return verdict(self.spread(a, metric), self.spread(b, metric), a, b)

    def summary(self, metric: str = WALL) -> str:
        """One line per configuration, the verdict of the first against each other one,
        and the load."""
        lines = [f"{n}: {self.spread(n, metric)}" for n in self.names]
        lines += [self.verdict(self.names[0], n, metric).text for n in self.names[1:]]
        lines.append(str(self.load))
        return "\n".join(lines)


def measure(
    configs: Mapping[str, Callable[[], Any]] | Callable[[], Any],
    repeats: int = 7,
    warmup: int = 2,
    metrics: Sequence[str] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    probe: LoadProbe | None = None,
    on_run: Callable[[int, int], None] | None = None,
    settle_s: float = 0.25,
) -> Measurement:
    """Measure configurations interleaved: ``warmup`` dropped rounds in the given order,
    then ``repeats`` rounds of every configuration, in the orders of :func:`round_order`
    (see the module docstring).

    ``configs`` maps names to callables (one callable alone is named ``"run"``). Each
    run is timed with ``clock`` (seconds) as metric ``"wall_ms"``; a callable returning
    a mapping adds its numeric entries (those named in ``metrics``, or all) as metrics.

    Before each run, other threads of this process go idle first (:func:`settle`, at most
    ``settle_s`` seconds; 0: not waited for), outside the timing.

    ``on_run(done, total)``, when given, is called after every run (warm-up included) with
    the runs done so far and the runs in all: a progress hook. An exception it raises (e.g.
    to cancel) propagates out of ``measure`` at once.
    """
    if callable(configs):
        configs = {"run": configs}
    if not configs:
        raise ValueError("measure() needs at least one configuration")
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    names = tuple(configs)
    samples: dict[str, dict[str, list[float]]] = {n: {WALL: []} for n in names}
    results: dict[str, Any] = {}
    total = (warmup + repeats) * len(names)
    done = 0

    def ran() -> None:
        nonlocal done
        done += 1
        if on_run is not None:
            on_run(done, total)

    for _ in range(warmup):
        for n in names:
            results[n] = configs[n]()
            ran()
    probe = (probe or LoadProbe()).start()
    for r in range(repeats):
        for n in (names[i] for i in round_order(len(names), r)):
            if settle_s > 0:
                settle(settle_s)
            t = clock()
            out = configs[n]()
            wall = (clock() - t) * 1e3
            results[n] = out
            per = samples[n]
            per[WALL].append(wall)
            if isinstance(out, Mapping):
                for k, v in out.items():
                    if (metrics is None or k in metrics) and _is_number(v):
                        per.setdefault(k, []).append(float(v))
            ran()
    load = probe.stop()
    frozen = {n: {k: tuple(v) for k, v in per.items()} for n, per in samples.items()}
    return Measurement(names, frozen, load, warmup, repeats, results)


def row_fields(name: str, s: Spread) -> dict[str, float]:
    """A spread as flat row fields: ``name`` ending in ``_ms`` (e.g. ``total_ms``) gives
    ``total_ms`` (the median), ``total_q1_ms``, ``total_q3_ms``, ``total_min_ms`` and
    ``total_max_ms``; any other name (e.g. ``host_share``) gives ``host_share``,
    ``host_share_q1``, ``host_share_q3``, ``host_share_min`` and ``host_share_max``."""
    stem, unit = (name[: -len("_ms")], "_ms") if name.endswith("_ms") else (name, "")
    return {
        f"{stem}{unit}": s.median,
        f"{stem}_q1{unit}": s.q1,
        f"{stem}_q3{unit}": s.q3,
        f"{stem}_min{unit}": s.min,
        f"{stem}_max{unit}": s.max,
    }


def load_fields(load: Load) -> dict[str, float]:
    """The load as flat row fields: ``load_avg`` (1-minute, at the start), ``cpu_busy``
    and ``other_busy`` (fractions of all CPUs)."""
    out = {"load_avg": load.loadavg_start}
    if load.cpu_busy == load.cpu_busy:  # not nan: /proc/stat was readable
        out.update(cpu_busy=load.cpu_busy, other_busy=load.other_busy)
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
