"""The served explorer app driven by Debian's Chromium through Playwright.

The app runs exactly as `make explorer` runs it (`panel serve apps/explorer.py`), on a free
localhost port; the server is stopped at the end whatever happens. Chromium failing to launch
fails the test (it is never skipped).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from acrobat import models
from tests.e2e.conftest import SHOTS, TIMEOUT_MS, open_tab

pytestmark = pytest.mark.e2e

BROKEN = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"
VALID = "def main(x: Tensor[4]) -> Tensor[4]:\n    return tanh(x)\n"


def _replace_source(page, text: str) -> None:
    """Select everything in the Ace source editor and paste ``text`` over it."""
    page.locator(".source-editor .ace_content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def test_explorer_loads_switches_size_and_survives_errors(explorer, page):
    from playwright.sync_api import expect

    offsite = []

    def note_offsite(request):
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname != "127.0.0.1":
            offsite.append(request.url)

    with explorer.log_on_failure():
        page.on("request", note_offsite)
        started = time.monotonic()
        page.goto(explorer.url)
        ir = page.locator(".ir-view pre.acrobat-ir")
        expect(ir).to_contain_text("def @main", timeout=TIMEOUT_MS)
        print(f"explorer page loaded with IR in {time.monotonic() - started:.2f} s")
        assert offsite == [], f"the page asked for off-machine resources: {offsite}"

        hidden = models.sizes("treelstm", "tiny")["H"]
        page.get_by_label("Model").select_option("treelstm")
        page.get_by_label("Size").select_option("tiny")
        expect(ir).to_contain_text(f"Tensor[{hidden}]")

        error = page.locator(".compile-error")
        _replace_source(page, BROKEN)
        page.locator(".compile-button button").click()
        expect(error).to_be_visible()
        expect(error).to_contain_text("line 2")
        expect(error).to_contain_text("AcrobatSyntaxError")

        _replace_source(page, VALID)
        page.locator(".compile-button button").click()
        expect(ir).to_contain_text("tanh(%x)")
        expect(error).to_be_hidden()
        assert offsite == [], f"the page asked for off-machine resources: {offsite}"


def _open_tab(page, name: str) -> None:
    open_tab(page, name)
    if SHOTS:
        page.wait_for_timeout(1500)  # let Bokeh draw before the picture
        page.screenshot(path=f"{SHOTS}/explorer_{name.lower()}.png")


def _note_offsite(page) -> list[str]:
    offsite: list[str] = []

    def note(request):
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname != "127.0.0.1":
            offsite.append(request.url)

    page.on("request", note)
    return offsite


def test_explorer_runs_switches_policy_b_and_survives_a_broken_program(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        offsite = _note_offsite(page)
        started = time.monotonic()
        page.goto(explorer.url)
        status = page.locator(".run-status")
        expect(status).to_contain_text("treelstm, small, 64 instances")
        print(
            f"\npage up, treelstm small x64 compiled + run A/B: {time.monotonic() - started:.2f} s"
        )

        _open_tab(page, "Schedule")
        summary = page.locator(".schedule-summary")
        expect(summary).to_contain_text("B · dynet-depth")
        started = time.monotonic()
        page.get_by_label("Policy B").select_option("dynet-agenda")
        expect(summary).to_contain_text("B · dynet-agenda")
        print(
            f"treelstm small x64: schedule view updated {time.monotonic() - started:.2f} s "
            "after switching policy B"
        )

        page.get_by_label("Model").select_option("mvrnn")
        page.get_by_label("Size").select_option("tiny")
        expect(status).to_contain_text("mvrnn, tiny, 64 instances")
        page.locator(".run-button button").click()
        expect(summary).to_contain_text("B · dynet-agenda")
        page.get_by_label("Policy B").select_option("eager")
        expect(summary).to_contain_text("B · eager")
        expect(summary).not_to_contain_text("dynet-agenda")

        for tab, selector, text in [
            ("Passes", ".pass-diff", "@@"),
            ("Taint", ".taint-view", "def @main"),
            ("DFG", ".dfg-view", "compose"),
            ("Timeline", ".timeline", ""),
            ("Compare", ".compare-table", "eager"),
            ("Kernels", ".kernel-source", "kernel_"),
        ]:
            _open_tab(page, tab)
            expect(page.locator(selector).first).to_be_visible()
            if text:
                expect(page.locator(selector).first).to_contain_text(text)

        _open_tab(page, "Program")
        _replace_source(page, BROKEN)
        page.locator(".compile-button button").click()
        error = page.locator(".compile-error")
        expect(error).to_be_visible()
        expect(error).to_contain_text("line 2")
        expect(status).to_contain_text("Not compiled")

        # The app still answers: picking a size reloads the model, which compiles and runs.
        page.get_by_label("Size").select_option("small")
        expect(error).to_be_hidden()
        expect(status).to_contain_text("mvrnn, small, 64 instances")
        _open_tab(page, "Schedule")
        expect(summary).to_contain_text("B · eager")
        assert offsite == [], f"the page asked for off-machine resources: {offsite}"


def test_trace_download_then_upload(explorer, page, tmp_path):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        status = page.locator(".run-status")
        expect(status).to_contain_text("64 instances", timeout=TIMEOUT_MS)
        page.get_by_label("Size").select_option("tiny")
        expect(status).to_contain_text("treelstm, tiny")
        with page.expect_download(timeout=TIMEOUT_MS) as download:
            page.locator(".trace-download").click()
        saved = tmp_path / "shared.jsonl"
        download.value.save_as(saved)
        assert '"event": "RunSummary"' in saved.read_text()

        page.locator(".trace-upload input[type=file]").set_input_files(str(saved))
        expect(status).to_contain_text("shared.jsonl")
        expect(status).to_contain_text("nothing was rerun")
