"""Cancel stops a run within a second, in Chromium: Berxit (the heaviest model) at the
largest batch the slider offers, Cancel clicked while a run is under way, the page idle
again within 1 s of the click, and the sidebar showing the settings of the run the views
show (the batch it had before the slider moved).

The 1 s is the engine's (a run stops before its next launch, or between the tiles of a
long one); the assertion allows 1 s more for the browser's round trips to the server (the
click's message in, the idle page's message out, Chromium redrawing) on a loaded machine.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.test_explorer_instrument_browser import _status, _text, _timed
from tests.e2e.test_slider_browser import _slider_value

pytestmark = pytest.mark.e2e

ENGINE_S = 1.0  # what the issue asks of the engine
ROUND_TRIPS_S = 1.0  # slack for the browser's messages to and from the server


def test_cancel_of_berxit_at_the_largest_batch_is_idle_within_1_s(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Model").select_option("berxit")
        expect(_status(page)).to_contain_text("berxit, small")
        _timed(page)
        shown = _slider_value(page)
        assert f"{shown} instances" in _text(_status(page))
        page.locator(".batch-size .noUi-handle").press("End")  # the largest batch
        largest = _slider_value(page)
        assert largest > shown
        working = page.locator(".run-working")
        progress = page.locator(".run-progress-text")
        expect(progress).to_contain_text(re.compile("running|timing"), timeout=120_000)
        time.sleep(1.0)  # well inside a run of Berxit at this batch (seconds each)
        assert "running" in _text(progress) or "timing" in _text(progress), _text(progress)
        page.locator(".cancel-button button").click()
        clicked = time.monotonic()
        expect(working).to_be_hidden(timeout=60_000)
        idle_s = time.monotonic() - clicked
        print(f"\nidle {idle_s:.2f} s after Cancel (berxit, {largest} instances)")
        assert idle_s < ENGINE_S + ROUND_TRIPS_S, f"idle only {idle_s:.2f} s after Cancel"
        # the sidebar shows what the views show: the batch of the run shown, not the largest
        expect(page.locator(".run-notice")).to_contain_text("Cancelled")
        assert _slider_value(page) == shown
        assert f"{shown} instances" in _text(_status(page))
