"""The Timeline tab and the Perfetto download, in the served app driven by Debian's Chromium.

The server and browser fixtures are in tests/e2e/conftest.py (`panel serve apps/explorer.py` on a
free localhost port, this checkout first on ``PYTHONPATH``).
"""

from __future__ import annotations

import json

import pytest

from tests.chrome_format import check_chrome_trace
from tests.e2e.conftest import TIMEOUT_MS, open_tab

pytestmark = pytest.mark.e2e
MEASURE_TOOL = "Measure a span (box select)"  # acrobat.viz.schedule_view.MEASURE_TOOL


@pytest.fixture
def viewport() -> dict:
    """This module's pages are 1600x1000 (the conftest ``page`` fixture reads it)."""
    return {"width": 1600, "height": 1000}


def test_perfetto_download_and_timeline_measurement(explorer, page, tmp_path):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        status = page.locator(".run-status")
        expect(status).to_contain_text("64 instances", timeout=TIMEOUT_MS)
        page.get_by_label("Size").select_option("tiny")
        expect(status).to_contain_text("treelstm, tiny")

        # the Perfetto download: the session (A, B and the passes) in the Chrome format
        with page.expect_download(timeout=TIMEOUT_MS) as download:
            page.locator(".trace-download-chrome").click()
        assert download.value.suggested_filename.endswith(".perfetto.json")
        saved = tmp_path / "session.json"
        download.value.save_as(saved)
        doc = json.loads(saved.read_text())
        assert check_chrome_trace(doc) == []
        processes = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
        assert {"run 1: acrobat", "run 2: dynet-depth"} <= processes
        batches = [e for e in doc["traceEvents"] if e.get("cat") == "batch"]
        assert batches and all(e["args"]["batch size"] >= 1 for e in batches)

        # the timeline: two figures, and a box selection measured in the Div under them
        open_tab(page, "Timeline")
        measure = page.get_by_text("Measure: pick the box-select tool")
        expect(measure).to_be_visible()
        tools = page.locator(f'[title="{MEASURE_TOOL}"]')
        expect(tools).to_have_count(2)
        tool = tools.first
        canvas = page.locator(".timeline canvas").first
        expect(canvas).to_be_visible()
        result = page.get_by_text("Selected span")
        for _attempt in range(10):  # Bokeh wires its toolbar and canvas up after they show
            if "bk-active" not in (tool.get_attribute("class") or ""):
                tool.click()
                page.wait_for_timeout(300)
                continue
            box = canvas.bounding_box()
            y = box["y"] + box["height"] * 0.5
            page.mouse.move(box["x"] + box["width"] * 0.2, y)
            page.mouse.down()
            page.mouse.move(box["x"] + box["width"] * 0.9, y, steps=8)
            page.mouse.up()
            if result.count():
                break
            page.wait_for_timeout(500)
        expect(result).to_be_visible()
        div = result.locator("xpath=..")  # the Div under the plots
        expect(div).to_contain_text("ms long")
        expect(div).to_contain_text("A · acrobat: kernel time")
        expect(div).to_contain_text("B · dynet-depth: kernel time")


def _timeline_runs(page) -> list[tuple[float, float, float, float]]:
    """Each side's (timed ms, drawn ms, IQR low, IQR high) from the Timeline's caption."""
    import re

    from tests.e2e.test_explorer_instrument_browser import TEXT

    text = page.locator(".timeline-runs").evaluate(TEXT)
    pat = (
        r"run \d+ of \d+ \(([\d.e+]+) ms timed, ([\d.e+]+) ms drawn\), the timed run nearest "
        r"the median [\d.e+]+ ms \(IQR ([\d.e+]+)–([\d.e+]+) ms\)"
    )
    return [tuple(map(float, m)) for m in re.findall(pat, text)]


@pytest.mark.parametrize("model", ["treelstm", "stackrnn"])
def test_the_timeline_draws_a_timed_run_inside_the_iqr(explorer, page, model):
    """Small b64: each side's Timeline is one of its timed runs, inside the status line's
    IQR; what it draws is that run's own span (the timed wall time adds only the call around
    it: within 10% or 2 ms, slack for a loaded machine)."""
    from playwright.sync_api import expect

    from tests.e2e.test_explorer_instrument_browser import _spreads, _timed

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        if model != "treelstm":
            page.get_by_label("Model").select_option(model)
            expect(page.locator(".run-status")).to_contain_text(f"{model}, small, 64 instances")
        status = _timed(page, iqr=True)
        open_tab(page, "Timeline")
        expect(page.locator(".timeline-runs")).to_contain_text("ms drawn")
        runs = _timeline_runs(page)
        assert len(runs) == 2, runs
        spreads = list(_spreads(status).values())
        for (timed, drawn, low, high), (_, s_low, s_high) in zip(runs, spreads):
            rounding = 0.005 * high  # the caption shows 3 significant digits
            assert low - rounding <= timed <= high + rounding, (timed, low, high)
            assert abs(low - s_low) <= rounding + 0.01 and abs(high - s_high) <= rounding + 0.01
            assert timed - max(2.0, 0.1 * timed) <= drawn <= timed + rounding, (timed, drawn)
