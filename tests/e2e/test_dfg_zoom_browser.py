"""A large DFG stays responsive: on TreeLSTM small b64 unfolded (4,068 boxes) the labels hide
while the wheel zooms and come back, at the new size, once the view holds still."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import TIMEOUT_MS, open_tab
from tests.e2e.test_explorer_instrument_browser import _timed

pytestmark = pytest.mark.e2e

NEWEST = """name => {
  const found = Bokeh.documents.flatMap(d => [...d.all_models].filter(m => m.name === name));
  return found[found.length - 1];
}"""
LABELS = f"""() => {{
  const labels = ({NEWEST})('labels');
  if (!labels) return {{visible: false, size: "0px", boxes: 0}};
  const size = labels.glyph.text_font_size;  // "11px", or a value spec {{value: "11px"}}
  return {{visible: labels.visible, size: typeof size === "string" ? size : size.value,
           boxes: labels.data_source.data.x.length}};
}}"""
FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def test_labels_of_a_4068_box_dfg_wait_while_the_wheel_zooms(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        open_tab(page, "DFG")
        fold = page.get_by_label("Fold above")
        fold.fill("5000")
        fold.press("Enter")
        page.locator(".dfg-view input[type=checkbox]").first.check()
        # the first view is at a readable scale: the labels show once it is drawn
        shown = f"() => {{ const l = ({LABELS})(); return l.boxes > 4000 && l.visible; }}"
        page.wait_for_function(shown, timeout=TIMEOUT_MS)
        before = page.evaluate(LABELS)
        canvas = page.locator(".dfg-plot canvas").first
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        started = time.monotonic()
        for _ in range(12):
            page.mouse.wheel(0, -120)  # zoom in: the labels stay readable, and grow
            page.evaluate(FRAMES)
            assert not page.evaluate(LABELS)["visible"]  # hidden while the view moves
        took = time.monotonic() - started
        print(f"\n12 wheel steps on {before['boxes']} boxes: {took:.2f} s")
        page.wait_for_function(f"() => ({LABELS})().visible", timeout=5_000)
        after = page.evaluate(LABELS)
        assert float(after["size"][:-2]) > float(before["size"][:-2]), (before, after)
        expect(canvas).to_be_visible()
