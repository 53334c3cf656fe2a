"""The progress bar moves during a long run, not only between runs (Berxit's runs take seconds
each: the bar sat at 0 for ~35 s), and its time left comes from the runs measured."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.conftest import TIMEOUT_MS
from tests.e2e.test_explorer_instrument_browser import _status, _text, _timed

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # Berxit's runs take seconds each


def _bar(page) -> tuple[float, str]:
    """The bar's value and the progress line, as the browser shows them now."""
    value = page.locator(".run-progress progress").first.evaluate("e => e.value")
    text = _text(page.locator(".run-progress-text").first)
    return float(value), text


def test_the_bar_advances_while_one_berxit_run_is_in_flight(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Model").select_option("berxit")
        expect(_status(page)).to_contain_text("berxit, small")
        _timed(page)
        handle = page.locator(".batch-size .noUi-handle")
        for _ in range(8):  # a larger batch: runs of a second or more each
            handle.press("ArrowRight")
        samples = []
        deadline = time.monotonic() + 3 * TIMEOUT_MS / 1000
        while time.monotonic() < deadline:
            value, text = _bar(page)
            runs = re.search(r"(\d+) of (\d+) runs", text)
            if runs:
                samples.append((runs[1], value))
            within = {}
            for done, v in samples:
                within.setdefault(done, []).append(v)
            if any(len(set(vs)) >= 3 for vs in within.values()):
                break
            time.sleep(0.05)
        moved = {d: vs for d, vs in within.items() if len(set(vs)) > 1}
        assert moved, f"the bar never moved within a run: {samples[:40]}"
        for vs in moved.values():
            assert vs == sorted(vs), f"the bar went back within a run: {vs}"
        page.locator(".cancel-button button").click()
        expect(page.locator(".run-working")).to_be_hidden(timeout=2 * TIMEOUT_MS)
