"""Linked views in the served explorer: a click on a schedule bar outlines its batch in the DFG.

Served as `make explorer` serves it (`panel serve apps/explorer.py`) on a free localhost port,
with this checkout first on ``PYTHONPATH`` (so a worktree serves its own code, not the installed
copy); driven by Debian's Chromium. The click lands on the bar's pixel, found through BokehJS's
own scales; the DFG's highlight is read back from the browser's copy of the figure's data.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import SHOTS, open_tab

pytestmark = pytest.mark.e2e

# Where to click: the centre of bar ``i`` of the schedule figure ``name`` (page pixels).
BAR_CENTRE = """([name, i]) => {
  function* walk(v) { yield v; for (const c of (v.child_views ?? [])) yield* walk(c); }
  for (const root of Bokeh.index.roots) for (const v of walk(root)) {
    if (v.model && v.model.name === name && v.frame) {
      const box = v.canvas_view.el.getBoundingClientRect();
      const bars = v.model.renderers.find((r) => r.name === "batches").data_source.data;
      return [box.left + v.frame.x_scale.compute(bars.x[i]),
              box.top + v.frame.y_scale.compute(bars.size[i] / 2)];
    }
  }
  return null;
}"""

# The browser's copy of the DFG figure's node data: which boxes are outlined.
DFG_OUTLINED = """() => {
  function* walk(v) { yield v; for (const c of (v.child_views ?? [])) yield* walk(c); }
  for (const root of Bokeh.index.roots) for (const v of walk(root)) {
    if (v.model && v.model.name === "dfg" && v.frame) {
      const nodes = v.model.renderers.find((r) => r.name === "nodes").data_source.data;
      return Array.from(nodes.id).filter((_, n) => nodes.in_batch[n]);
    }
  }
  return null;
}"""


@pytest.fixture
def viewport() -> dict:
    """This module's pages are 1600x1000 (the conftest ``page`` fixture reads it)."""
    return {"width": 1600, "height": 1000}


def _open_tab(page, name: str) -> None:
    open_tab(page, name)
    if SHOTS:
        page.wait_for_timeout(1500)  # let Bokeh draw before the picture
        page.screenshot(path=f"{SHOTS}/linked_{name.lower()}.png")


def test_clicking_a_schedule_bar_outlines_its_batch_in_the_dfg(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        status = page.locator(".run-status")
        expect(status).to_contain_text("64 instances")
        page.get_by_label("Size").select_option("tiny")
        expect(status).to_contain_text("treelstm, tiny, 64 instances")

        _open_tab(page, "Schedule")
        expect(page.locator(".schedule-summary")).to_contain_text("B · dynet-depth")
        page.wait_for_function("() => window.Bokeh && Bokeh.index.roots.length > 0")
        batch = 4  # dynet-depth's 5th launch: the depth-4 tree cells of many instances
        where = None
        for _ in range(50):  # until BokehJS has laid the figure out
            where = page.evaluate(BAR_CENTRE, ["schedule-b", batch])
            if where is not None:
                break
            page.wait_for_timeout(200)
        assert where is not None, "no schedule-b figure in the page"
        page.mouse.click(*where)
        details = page.locator(".batch-details")
        expect(details).to_contain_text(f"batch {batch} (launch {batch + 1} of the run)")
        expect(details.locator(".selection-details")).to_have_attribute("data-batch", str(batch))

        _open_tab(page, "DFG")
        pane = page.locator(".dfg-details")
        expect(pane).to_contain_text(f"dynet-depth · batch {batch}")
        expect(pane).to_contain_text("cell_node1")  # its kernel
        expect(pane).to_contain_text("treelstm.py: line 22")  # the source line it came from
        instances = pane.locator(".selection-details").get_attribute("data-instances")
        assert instances and len(instances.split(",")) > 1  # several instances in the batch
        highlight = pane.locator(".dfg-highlight")
        expect(highlight).to_have_attribute("data-batch", str(batch))
        boxes = int(highlight.get_attribute("data-boxes"))
        assert boxes > 0
        outlined = page.evaluate(DFG_OUTLINED)
        assert outlined is not None and len(outlined) == boxes  # the browser draws them
