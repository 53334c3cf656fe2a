"""The explorer's smaller points in Chromium: long lines reachable at 1600x1000 and 1400x900,
optimization labels, the backend note, the compile error's location and contrast, the taint
stage picker.

The app is served as in test_explorer_browser.py (`panel serve apps/explorer.py` on a free
localhost port), with this checkout first on ``PYTHONPATH`` so the server runs this tree's
``acrobat`` whatever the environment has installed.
"""

from __future__ import annotations

import re

import pytest

import acrobat
from tests.e2e.conftest import SHOTS, open_tab
from tests.e2e.test_explorer_browser import _replace_source
from tests.viz.test_small_points import contrast

pytestmark = pytest.mark.e2e

BROKEN = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"
SIZES = ((1600, 1000), (1400, 900))
# (tab, the code blocks it shows): each must scroll inside itself, sideways too
CODE_BLOCKS = (
    ("Program", ".ir-view pre.acrobat-ir"),
    ("Passes", ".pass-diff pre.acrobat-diff"),
    ("Taint", ".taint-view pre.acrobat-ir"),
    ("Kernels", ".kernel-source pre"),
    ("Kernels", ".host-program pre"),
)
# What a code block reports about itself (in its shadow root, so through JavaScript).
MEASURE = """el => {
  const style = getComputedStyle(el);
  const rect = el.getBoundingClientRect();
  const host = el.getRootNode().host.getBoundingClientRect();
  el.scrollLeft = el.scrollWidth;
  const reached = el.scrollLeft + el.clientWidth >= el.scrollWidth - 1;
  el.scrollLeft = 0;
  return {overflowX: style.overflowX, whiteSpace: style.whiteSpace, maxHeight: style.maxHeight,
          scrollWidth: el.scrollWidth, clientWidth: el.clientWidth,
          clientHeight: el.clientHeight, right: rect.right, hostRight: host.right,
          viewport: window.innerWidth, reached: reached};
}"""


@pytest.fixture
def viewport() -> dict:
    """This module's pages are 1600x1000 (the conftest ``page`` fixture reads it)."""
    return {"width": 1600, "height": 1000}


def _open_tab(page, name: str, shot: str = "") -> None:
    open_tab(page, name)
    if SHOTS and shot:
        page.wait_for_timeout(1500)
        page.screenshot(path=f"{SHOTS}/small_{shot}.png")


def _rgb(css: str) -> str:
    """``rgb(r, g, b)`` as ``#rrggbb``."""
    r, g, b = (int(part) for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def test_long_lines_scroll_inside_their_block_at_both_sizes(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        expect(page.locator(".ir-view pre.acrobat-ir")).to_contain_text("def @main")
        page.get_by_label("Model").select_option("stackrnn")
        expect(page.locator(".run-status")).to_contain_text("stackrnn, small")
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            wide = 0
            for tab, selector in CODE_BLOCKS:
                _open_tab(page, tab, f"stackrnn_{tab.lower()}_{width}x{height}")
                block = page.locator(selector).first
                expect(block).to_be_visible()
                got = block.evaluate(MEASURE)
                where = f"{selector} at {width}x{height}: {got}"
                assert got["overflowX"] in ("auto", "scroll"), where
                assert got["whiteSpace"] == "pre", where  # lines are kept whole
                assert got["maxHeight"] != "none", where  # so its scrollbar is on screen
                assert got["right"] <= got["hostRight"] + 1, where  # its pane does not cut it
                assert got["right"] <= got["viewport"] + 1, where  # nor does the window
                assert got["reached"], where  # the end of the longest line can be scrolled to
                wide += got["scrollWidth"] > got["clientWidth"]
            assert wide, f"no block had a line longer than its width at {width}x{height}"


def test_labels_backend_note_error_and_taint_stage(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        expect(page.locator(".ir-view pre.acrobat-ir")).to_contain_text("def @main")

        # optimizations by human label, the store's field names nowhere on the page
        switches = page.locator(".optimizations")
        for switch in acrobat.CompileOptions.switches():
            if switch.default:
                expect(switches).to_contain_text(switch.label)
        expect(switches).not_to_contain_text("horizontal_batching")

        # backends that cannot run: named with the reason under the picker; what auto picks
        note = page.locator(".backend-note")
        for info in acrobat.backends():
            if not info.available:
                expect(note).to_contain_text(f"{info.name}: {info.reason}")
        page.get_by_label("Backend").select_option("auto")
        expect(note).to_contain_text("auto runs on")
        expect(page.locator(".run-status")).to_contain_text("auto → ")
        page.get_by_label("Backend").select_option("numpy")

        # the compile error: its location once, readable colours, the message wrapping
        _replace_source(page, BROKEN)
        page.locator(".compile-button button").click()
        error = page.locator(".compile-error .compile-error-box")
        expect(error).to_be_visible()
        expect(error).to_contain_text("line 2, column 14")
        text = error.inner_text()
        assert text.count("line 2") == 1 and "2:14" not in text, text
        message = page.locator(".compile-error pre.error-message")
        expect(message).to_contain_text("AcrobatSyntaxError")
        style = message.evaluate(
            "el => { const s = getComputedStyle(el); const box = getComputedStyle("
            "el.closest('.compile-error-box')); return [s.color, box.backgroundColor, "
            "s.whiteSpace, s.fontFamily]; }"
        )
        colour, background, white_space, font = style
        assert contrast(_rgb(colour), _rgb(background)) >= 4.5, style
        assert white_space == "pre-wrap" and "mono" in font.lower(), style
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/small_error.png")

        # the taint tab starts before fusion; StackRNN's %depth is tensor-dependent
        page.get_by_label("Model").select_option("stackrnn")
        expect(page.locator(".run-status")).to_contain_text("stackrnn, small")
        _open_tab(page, "Taint", "taint_stackrnn")
        stage = page.locator(".taint-stage select")
        expect(stage).to_have_value(re.compile(r"\(before fusion\)$"))
        depth = page.locator('.taint-view span[title="depth: tensor-dependent"]').first
        expect(depth).to_be_visible()
        expect(page.locator("ul.taint-legend")).not_to_contain_text("weights only")
        expect(page.locator("ul.taint-legend")).to_contain_text("by which branch ran")
