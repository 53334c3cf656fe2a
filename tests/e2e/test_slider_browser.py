"""The batch slider and the run agree however fast it is moved: keys pressed as fast as
Playwright can, then the run shown must be of the batch the slider shows."""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_explorer_instrument_browser import _text

pytestmark = pytest.mark.e2e


def _slider_value(page) -> int:
    title = page.locator(".batch-size .bk-slider-title").first
    return int(re.search(r"(\d+)\s*$", title.inner_text()).group(1))


def test_the_run_shown_is_of_the_batch_the_slider_shows_after_fast_keys(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        status = page.locator(".run-status")
        page.get_by_label("Size").select_option("tiny")
        expect(status).to_contain_text("treelstm, tiny")
        expect(status).to_contain_text("IQR")
        handle = page.locator(".batch-size .noUi-handle")
        for key in ["ArrowLeft"] * 9 + ["ArrowRight"] * 3 + ["ArrowLeft"] * 11:
            handle.press(key)
        for _ in range(3):  # the slider must hold still while the runs settle
            shown = _slider_value(page)
            expect(status).to_contain_text(f"{shown} instances", timeout=120_000)
            expect(status).to_contain_text("IQR", timeout=120_000)
        final = _slider_value(page)
        assert final == shown, f"the slider moved to {final} after the run of {shown}"
        assert f"{final} instances" in _text(status)
