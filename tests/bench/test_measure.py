"""The measurement protocol (acrobat.measure): statistics, verdicts, interleaving and load,
with synthetic callables, a fake clock and sample lists (no wall-clock assertions)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

import acrobat
from acrobat.baselines.measure import Load, Spread, measure, spread, verdict


class FakeClock:
    """A clock that a configuration advances by its own, scripted duration."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeProbe:
    def start(self):
        return self

    def stop(self) -> Load:
        return Load(0.5, 0.7, 0.25, 0.1, 2, 1.0)


def scripted(clock: FakeClock, log: list, name: str, durations_ms):
    it = iter(durations_ms)

    def run():
        log.append(name)
        clock.now += next(it) / 1e3
        return {"total_ms": 1.0, "policy": "x", "flag": True}

    return run


def test_spread_statistics():
    s = spread([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.q1, s.q3, s.min, s.max, s.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert s.iqr == 2.0
    one = spread([7.0])
    assert (one.median, one.q1, one.q3, one.iqr) == (7.0, 7.0, 7.0, 0.0)
    even = spread([1.0, 2.0, 3.0, 4.0])
    assert even.median == 2.5 and even.q1 == 1.75 and even.q3 == 3.25
    with pytest.raises(ValueError):
        spread([])


def test_spread_is_frozen_and_prints():
    s = spread([1.0, 2.0, 3.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.median = 0.0
    assert "IQR" in str(s) and "n=3" in str(s)


def test_verdict_within_noise_when_iqrs_overlap():
    a = spread([10, 11, 12, 13, 14])  # IQR 11..13
    b = spread([12.5, 13, 14, 15, 16])  # IQR 13..15: touches
    v = verdict(a, b, "a", "b")
    assert v.within_noise and v.faster is None and "within noise" in v.text
    assert v.ratio == pytest.approx(14 / 12)


def test_verdict_names_the_faster_and_the_ratio():
    a = spread([20, 21, 22, 23, 24])
    b = spread([10, 10.5, 11, 11.5, 12])
    v = verdict(a, b, "slow", "fast")
    assert not v.within_noise and v.faster == "fast"
    assert v.ratio == pytest.approx(22 / 11)
    assert v.text.startswith("fast is 2.00x faster than slow")
    # symmetric
    w = verdict(b, a, "fast", "slow")
    assert w.faster == "fast" and w.ratio == pytest.approx(v.ratio)


def test_wide_spread_hides_a_median_difference():
    a = spread([10, 10, 10, 30, 30])  # IQR 10..30
    b = spread([19, 20, 20, 20, 21])
    assert verdict(a, b).within_noise


def test_measure_interleaves_after_warmup():
    clock, log = FakeClock(), []
    configs = {
        "A": scripted(clock, log, "A", itertools.repeat(3.0)),
        "B": scripted(clock, log, "B", itertools.repeat(1.0)),
        "C": scripted(clock, log, "C", itertools.repeat(2.0)),
    }
    m = measure(configs, repeats=4, warmup=2, clock=clock, probe=FakeProbe())
    # 2 warm-up rounds, then 4 rounds in the orders of a balanced Latin square
    assert log == ["A", "B", "C"] * 2 + ["A", "B", "C", "A", "C", "B", "C", "A", "B", "C", "B", "A"]
    assert m.names == ("A", "B", "C") and m.repeats == 4 and m.warmup == 2
    assert m.samples["A"]["wall_ms"] == pytest.approx((3.0,) * 4)
    assert m.spread("B").median == pytest.approx(1.0)
    # numeric entries of a returned mapping become metrics; strings and bools do not
    assert m.samples["C"]["total_ms"] == (1.0,) * 4
    assert set(m.samples["C"]) == {"wall_ms", "total_ms"}
    assert m.verdict("A", "B").faster == "B"
    assert m.load.cpu_busy == 0.25
    text = m.summary()
    assert "B is 3.00x faster than A" in text and "load 0.50->0.70" in text


def test_measure_metrics_filter_and_single_callable():
    clock, log = FakeClock(), []
    m = measure(
        scripted(clock, log, "x", [9, 9, 1, 2, 3]),
        repeats=3,
        warmup=2,
        metrics=["nothing"],
        clock=clock,
        probe=FakeProbe(),
    )
    assert m.names == ("run",) and set(m.samples["run"]) == {"wall_ms"}
    assert m.samples["run"]["wall_ms"] == pytest.approx((1.0, 2.0, 3.0))  # warm-up dropped


def test_measure_rejects_bad_arguments():
    with pytest.raises(ValueError):
        measure({})
    with pytest.raises(ValueError):
        measure(lambda: None, repeats=0)


def test_real_load_probe_reads_the_machine():
    m = measure(lambda: sum(range(1000)), repeats=3, warmup=0)
    load = m.load
    assert load.cpus >= 1 and load.seconds >= 0 and load.loadavg_start >= 0
    assert (load.cpu_busy != load.cpu_busy) or 0.0 <= load.other_busy <= 1.0  # nan or a fraction


def test_facade_exports_measure():
    assert acrobat.measure is measure
    assert acrobat.Measurement is not None and acrobat.Spread is Spread


def test_a_run_waits_until_the_last_configurations_threads_are_idle():
    """A thread the previous configuration left spinning (as OpenBLAS's workers do for
    about 0.1 s) has stopped before the next run starts, and the wait is bounded."""
    import threading
    import time

    from acrobat.baselines.measure import _running_threads, settle

    if _running_threads() is None:
        pytest.skip("no /proc here")
    stop = threading.Event()
    seen = []

    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end and not stop.is_set():
            pass

    def leaves_a_spinner():
        threading.Thread(target=spin, args=(0.15,), daemon=True).start()
        time.sleep(0.01)  # it is running when this configuration returns

    def looks():
        seen.append(_running_threads())

    measure({"a": leaves_a_spinner, "b": looks}, repeats=2, warmup=0, settle_s=2.0)
    assert seen == [1, 1]  # only the measuring thread ran when "b" started
    # bounded: a thread that never stops costs at most the timeout
    t = threading.Thread(target=spin, args=(5.0,), daemon=True)
    t.start()
    try:
        time.sleep(0.01)
        assert 0.05 <= settle(0.05) < 1.0
    finally:
        stop.set()
        t.join()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9])
def test_round_orders_give_every_configuration_every_predecessor(n):
    """Each round is a permutation, and over n rounds (2n for odd n) each configuration
    runs right after every other one: no row of the grid always follows the same
    configuration (a DyNet worker that fills the caches, say)."""
    from acrobat.baselines.measure import round_order

    rows = [round_order(n, r) for r in range(n if n % 2 == 0 else 2 * n)]
    assert all(sorted(row) == list(range(n)) for row in rows)
    before = {c: set() for c in range(n)}
    for row in rows:
        for a, b in zip(row, row[1:]):
            before[b].add(a)
    assert all(before[c] == set(range(n)) - {c} for c in range(n))
