"""A shared trace cannot run script in the viewer's page: a trace whose every string holds a
``<script>`` and an ``<img onerror>`` is uploaded to the served explorer, every tab is opened,
and Chromium's ``window.__xss`` must stay unset (tests/viz checks the HTML itself)."""

from __future__ import annotations

import pytest

from acrobat.viz.app_state import ExplorerState
from tests.e2e.conftest import open_tab
from tests.viz.test_untrusted_trace import poisoned_trace_text

pytestmark = pytest.mark.e2e


def test_an_uploaded_trace_full_of_markup_runs_no_script(explorer, page, tmp_path):
    from playwright.sync_api import expect

    state = ExplorerState(model="treelstm", size="tiny", batch_size=3, repeats=1)
    assert state.run(), state.run_error
    poisoned = tmp_path / "xss.jsonl"
    poisoned.write_text(poisoned_trace_text(state))
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with explorer.log_on_failure():
        page.goto(explorer.url)
        status = page.locator(".run-status")
        expect(status).to_contain_text("treelstm")
        page.locator(".trace-upload input[type=file]").set_input_files(str(poisoned))
        expect(status).to_contain_text("xss.jsonl")
        for tab in ("Schedule", "DFG", "Timeline", "Compare", "Kernels", "Taint", "Passes"):
            open_tab(page, tab)
        open_tab(page, "Schedule")
        expect(page.locator(".schedule-summary")).to_contain_text("<script>")  # shown as text
        assert page.evaluate("window.__xss") is None and dialogs == []
