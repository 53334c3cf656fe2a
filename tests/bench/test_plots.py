"""The report's plots and checks: speed-ups on a log axis with IQR whiskers and a 1x line, a
roofline, and a miss called only when the spreads are apart."""

from __future__ import annotations

import pytest

from acrobat.bench.plots import html, roofline_points, speedups
from acrobat.bench.report import meets, targets


def _row(system: str, policy: str, ms: float, spread: float = 0.0, **extra) -> dict:
    return {
        "system": system,
        "policy": policy,
        "model": "birnn",
        "size": "small",
        "batch": 8,
        "total_ms": ms,
        "total_q1_ms": ms - spread,
        "total_q3_ms": ms + spread,
        **extra,
    }


ROWS = [
    {"system": "sgemm", "model": "-", "size": "512", "batch": 0, "total_ms": 1.0, "gflops": 100.0},
    {"system": "stream", "model": "-", "size": "32", "batch": 0, "total_ms": 1.0, "gbps": 10.0},
    _row("acrobat", "acrobat", 10.0, 1.0, flops=2e8, min_bytes=1e7, gen_ms=2.0, exe_ms=8.0),
    _row("acrobat", "eager", 95.0, 5.0, flops=2e8, min_bytes=1e7),
    _row("dynet-depth", "depth", 9.5, 2.0),
    _row("eager-numpy", "-", 5.0, 0.1),
]


def test_speedups_carry_the_iqr_range_and_a_verdict():
    by = {d["label"].split(" vs ")[1]: d for d in speedups(ROWS)}
    assert by["acrobat/eager"]["ratio"] == pytest.approx(9.5)
    assert by["acrobat/eager"]["low"] == pytest.approx(90 / 11)
    assert by["acrobat/eager"]["verdict"] == "faster"
    assert by["dynet-depth"]["verdict"] == "within noise"  # 0.95x, but the IQRs overlap
    assert by["eager-numpy"]["verdict"] == "slower"


def test_roofline_points_are_intensity_and_achieved_rate():
    (a, e) = roofline_points(ROWS)
    assert a["intensity"] == pytest.approx(20.0) and a["gflops"] == pytest.approx(20.0)
    assert a["low"] < a["gflops"] < a["high"] and e["gflops"] == pytest.approx(2e8 / 95e6)


def test_page_has_a_log_speedup_axis_whiskers_a_1x_line_and_a_roofline():
    page = html(ROWS)
    for part in ('"LogAxis"', '"Whisker"', '"Span"', "roofline", "single SGEMM 100 GFLOP/s"):
        assert part in page, part


def test_a_miss_is_called_only_when_the_spreads_are_apart():
    a = _row("acrobat", "acrobat", 10.0, 2.0)
    assert meets(a, _row("x", "-", 10.0, 0.5), 1.0) == "met"
    assert meets(_row("acrobat", "acrobat", 11.0, 2.0), a, 1.0) == "within noise"
    assert meets(_row("acrobat", "acrobat", 20.0, 1.0), a, 1.0) == "MISSED"
    text = targets([a, _row("dynet-agenda", "agenda", 9.0, 3.0)])
    assert "DyNet best (agenda) / acrobat = 0.90 (within noise, target >= 1.0)" in text
