"""How far the explorer's work has got, and how long the rest takes, from what was measured.

A request (a run, a comparison) is a known number of runs of one workload: the traced runs the
views draw, then the timed ones. Before one of them has finished, a run is estimated by the probe
(``runner.probe_ms``: a few instances, extended to the batch) times a :class:`Calibration`, the
median ratio of a measured run to its probe seen so far (the probe runs a few instances on a warm
process, so it reads low: about 3x on Berxit). Once runs of the request have finished, the mean
of their wall times estimates each one left: ``left = mean × runs left − time in the run in flight``.

The bar moves during a run too (a :class:`Ticker` redraws it): the run in flight counts as done
in proportion to its time so far over the estimate, up to ``IN_FLIGHT_CAP`` of one run, so a run
longer than estimated waits near its end instead of overshooting. No GUI imports.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

IN_FLIGHT_CAP = 0.9  # the most of one run the run in flight counts for
TICK_S = 0.25  # how often the Ticker redraws the bar


@dataclass
class Calibration:
    """Measured run time over the probe's estimate, for every request measured so far."""

    ratios: list[float] = field(default_factory=list)

    def scale(self) -> float:
        """The median ratio, or 1 before anything was measured."""
        return statistics.median(self.ratios) if self.ratios else 1.0

    def estimate_ms(self, probe_ms: float) -> float:
        """One run, from its probe: ``probe_ms × scale()``."""
        return probe_ms * self.scale()

    def add(self, probe_ms: float, measured_ms: float) -> None:
        """A run estimated by ``probe_ms`` took ``measured_ms`` (ignored if either is 0)."""
        if probe_ms > 0 and measured_ms > 0:
            self.ratios.append(measured_ms / probe_ms)


@dataclass
class RunPlan:
    """``total`` runs, each estimated at ``estimate_ms`` until runs of them have finished.
    Call :meth:`start` as the first run starts and :meth:`finish` as each one ends (the next
    is taken to start then)."""

    total: int
    estimate_ms: float
    clock: Callable[[], float] = time.monotonic
    done_ms: list[float] = field(default_factory=list)  # wall time of each finished run
    started: float | None = None  # when the run in flight started

    def start(self) -> None:
        """The first run (or the next, after a pause) starts now."""
        self.started = self.clock()

    def finish(self) -> None:
        """The run in flight ended now; the next starts now."""
        now = self.clock()
        if self.started is not None:
            self.done_ms.append((now - self.started) * 1000)
        self.started = now

    @property
    def done(self) -> int:
        """Runs finished."""
        return len(self.done_ms)

    def per_run_ms(self) -> float:
        """One run's estimate: the mean of the finished runs, else ``estimate_ms``."""
        return statistics.fmean(self.done_ms) if self.done_ms else self.estimate_ms

    def in_flight_ms(self) -> float:
        """Time spent so far in the run in flight (0 when none is, or all are done)."""
        if self.started is None or self.done >= self.total:
            return 0.0
        return (self.clock() - self.started) * 1000

    def fraction(self) -> float:
        """Share of the work done (0..1), the run in flight counted by its time so far."""
        if self.total <= 0 or self.done >= self.total:
            return 1.0
        per = max(self.per_run_ms(), 1e-9)
        current = min(self.in_flight_ms() / per, IN_FLIGHT_CAP)
        return (self.done + current) / self.total

    def left_s(self) -> float:
        """Seconds left: the runs not finished at the estimate, less the time in flight."""
        left = (self.total - self.done) * self.per_run_ms() - self.in_flight_ms()
        return max(left, 0.0) / 1000


class Ticker:
    """While open (a context manager), shows ``plan``'s progress through ``show(percent,
    text, force)`` every ``period_s`` seconds from a daemon thread, so the bar keeps moving
    while the work thread is inside one long run; :meth:`say` names the step and shows it
    now (``force``: a step is never dropped to limit the updates)."""

    def __init__(
        self, plan: RunPlan, show: Callable[[int, str, bool], None], period_s: float = TICK_S
    ):
        self.plan, self.show, self.period_s = plan, show, period_s
        self.what = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)

    def line(self) -> tuple[int, str]:
        """The percent done and the line saying the step, the runs done and the time left."""
        plan = self.plan
        left = plan.left_s()
        when = f"about {left:.0f} s left" if left >= 1 else "under 1 s left"
        text = f"{self.what}: {plan.done} of {plan.total} runs, {when}"
        return int(100 * plan.fraction()), text

    def say(self, what: str) -> None:
        """The work moved on to step ``what``: show it now."""
        self.what = what
        self.show(*self.line(), True)

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.show(*self.line(), False)

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
