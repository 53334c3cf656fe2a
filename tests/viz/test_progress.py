"""Estimates from what was measured, and a bar that moves during a long run."""

from __future__ import annotations

import re
import time

import pytest

from acrobat.viz import runner
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.progress import IN_FLIGHT_CAP, Calibration, RunPlan, Ticker


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_calibration_scales_the_probe_by_the_median_measured_ratio():
    calibration = Calibration()
    assert calibration.estimate_ms(10.0) == 10.0  # nothing measured: the probe itself
    calibration.add(100.0, 300.0)
    calibration.add(100.0, 250.0)
    calibration.add(0.0, 50.0)  # no probe: nothing learnt
    assert calibration.scale() == pytest.approx(2.75)
    assert calibration.estimate_ms(10.0) == pytest.approx(27.5)


def test_the_first_runs_time_estimates_the_runs_left():
    clock = Clock()
    plan = RunPlan(total=4, estimate_ms=1000.0, clock=clock)
    plan.start()
    clock.now = 0.5  # half the estimate into the first run
    assert plan.fraction() == pytest.approx(0.5 / 4)
    assert plan.left_s() == pytest.approx(3.5)
    clock.now = 2.0  # longer than estimated: the bar waits near the run's end
    assert plan.fraction() == pytest.approx(IN_FLIGHT_CAP / 4)
    plan.finish()  # the first run took 2 s: each of the 3 left is taken to take 2 s
    assert plan.left_s() == pytest.approx(6.0)
    clock.now = 3.0
    assert plan.fraction() == pytest.approx(1.5 / 4)
    assert plan.left_s() == pytest.approx(5.0)
    for now in (4.0, 6.0, 8.0):
        clock.now = now
        plan.finish()
    assert plan.done == 4 and plan.fraction() == 1.0 and plan.left_s() == 0.0
    assert plan.per_run_ms() == pytest.approx(2000.0)


def test_the_ticker_line_names_the_step_runs_and_time_left():
    clock = Clock()
    plan = RunPlan(total=10, estimate_ms=4000.0, clock=clock)
    plan.start()
    shown = []
    ticker = Ticker(plan, lambda percent, text, force: shown.append((percent, text, force)))
    clock.now = 2.0
    ticker.say("timing acrobat")
    assert shown == [(5, "timing acrobat: 0 of 10 runs, about 38 s left", True)]


def test_the_bar_moves_during_a_long_run_and_the_next_estimate_is_calibrated(monkeypatch):
    real = runner.run_stats

    def slow(*args):
        once = real(*args)

        def run():
            time.sleep(0.6)  # a run far longer than the probe says
            return once()

        return run

    monkeypatch.setattr(runner, "run_stats", slow)
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, repeats=2, background=True)
    assert state.wait(60)
    seen = []
    state.param.watch(lambda e: seen.append((state.progress, e.new)), "progress_text")
    state.request_run()
    assert state.wait(60) and state.run_error == ""
    timing = [(p, int(re.search(r": (\d+) of", t)[1])) for p, t in seen if t.startswith("timing")]
    inside = {}
    for percent, done in timing:  # the percents shown while one run was in flight
        inside.setdefault(done, []).append(percent)
    moving = [ps for ps in inside.values() if len(set(ps)) > 1]
    assert moving and all(ps == sorted(ps) for ps in moving), inside
    # what was measured now scales the probe: the next estimate is near the runs' mean
    probe = next(iter(state._estimates.values()))
    assert state._calibration.estimate_ms(probe) > 300 > 10 * probe
