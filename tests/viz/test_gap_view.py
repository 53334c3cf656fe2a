"""The "why above the lower bound" panel: acrobat.gap_report of the workload shown, as HTML."""

from __future__ import annotations

import re

import acrobat
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.explorer import Explorer
from acrobat.viz.gap_view import above_bound, gap_html

MARKUP = "<script>window.__xss=1</script>"


def _report(**change):
    kernel = acrobat.KernelGap(
        kernel=MARKUP + "k",
        launches={"acrobat": 7, "dynet-depth": 6, "dynet-agenda": 9},
        lower_bound=5,
        nodes=40,
        lines=((3, "h = tanh(<b>x</b>)"),),
        functions=(MARKUP,),
    )
    exact = acrobat.KernelGap("exact", {"acrobat": 2, "dynet-depth": 2, "dynet-agenda": 2}, 2, 8)
    fields = dict(
        instances=4,
        passes=2,
        launches={"acrobat": 9, "dynet-depth": 8, "dynet-agenda": 11},
        lower_bound=7,
        kernels=(exact, kernel),
        source_file=MARKUP + ".py",
    )
    return acrobat.GapReport(**(fields | change))


def test_the_panel_says_how_far_above_the_bound_and_which_kernels_escaped():
    text = gap_html(_report())
    assert "acrobat launches 9 batches for a lower bound of 7: 2 above it" in text
    assert "dynet-depth launches 8 and dynet-agenda 11" in text
    rows = re.findall(r"<tr><td>(.*?)</td>", text)
    assert rows[0].endswith("k") and rows[1] == "exact"  # furthest above its bound first
    assert "<script" not in text and "<b>x" not in text
    assert "&lt;script&gt;" in text and "tanh(&lt;b&gt;x&lt;/b&gt;)" in text


def test_above_bound_counts_acrobat_launches_past_the_kernel_bound():
    kernels = _report().kernels
    assert [above_bound(k) for k in kernels] == [0, 2]


def test_the_schedule_tab_explains_the_gap_of_the_workload_shown(stackrnn):
    state = ExplorerState(model="stackrnn", size="tiny", batch_size=6, repeats=1)
    explorer = Explorer(state=state)
    assert state.run(), state.run_error
    explorer.open_tab("Schedule")
    view = explorer.views["Schedule"]
    view.gap_button.clicks += 1
    report = state.gap
    assert report is not None and report.instances == 6
    stats = state.record.get("acrobat", "all optimizations")
    assert report.launches["acrobat"] == stats.launches  # the same workload as the runs
    assert report.lower_bound == stats.lower_bound
    assert "for a lower bound of" in view.gap.object
    assert state.run(("a",))  # a new run: the report was the old run's
    assert state.gap is None and view.gap.object == ""
