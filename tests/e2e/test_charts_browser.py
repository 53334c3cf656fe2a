"""The Schedule tab's charts in Chromium: StackRNN's run passes are marked, policy A and B can
each span their own batches, and "Why above the lower bound?" explains the gap."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import TIMEOUT_MS, open_tab
from tests.e2e.test_explorer_instrument_browser import _status, _timed

pytestmark = pytest.mark.e2e

# what BokehJS holds for the two schedule figures: x range ends and pass lines drawn
FIGURES = """() => {
  const newest = name => {
    const found = Bokeh.documents.flatMap(d => [...d.all_models].filter(m => m.name === name));
    return found[found.length - 1];  // a redrawn figure replaces one made before it
  };
  return ['schedule-a', 'schedule-b'].map(name => {
    const fig = newest(name);
    const passes = fig.renderers.find(r => r.name === 'pass_starts');
    return {end: fig.x_range.end, range: fig.x_range.id, passes: passes.data_source.data.x.length};
  });
}"""


def test_pass_lines_own_x_ranges_and_the_gap_panel(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Model").select_option("stackrnn")
        page.get_by_label("Size").select_option("tiny")
        expect(_status(page)).to_contain_text("stackrnn, tiny")
        page.get_by_label("Policy B").select_option("eager")
        open_tab(page, "Schedule")
        summary = page.locator(".schedule-summary")
        expect(summary).to_contain_text("B · eager", timeout=TIMEOUT_MS)
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
        a, b = page.evaluate(FIGURES)
        assert a["passes"] > 0 and a["range"] == b["range"], (a, b)  # one shared x range

        page.locator(".shared-x input").uncheck()
        page.wait_for_function(
            f"() => {{ const [a, b] = ({FIGURES})(); return a.range !== b.range; }}"
        )
        a, b = page.evaluate(FIGURES)
        assert a["end"] < b["end"], (a, b)  # acrobat's fewer batches fill their own figure

        page.locator(".gap-button button").click()
        gap = page.locator(".gap-report")
        expect(gap).to_contain_text("for a lower bound of", timeout=TIMEOUT_MS)
        expect(gap).to_contain_text("above bound")
