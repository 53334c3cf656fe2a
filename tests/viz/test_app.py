"""The explorer app without a browser: build it, set widgets, assert the figures' data changes."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import panel as pn
import param
import pytest

from acrobat import models
from acrobat.errors import AcrobatNameError
from acrobat.trace import BatchFormed, KernelCompiled, NodeRecorded
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.explorer import Explorer, explorer_views, register_view, unregister_view
from acrobat.viz.lazy_view import LazyView
from tests.chrome_format import check_chrome_trace

ROOT = Path(__file__).resolve().parents[2]
BROKEN = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"


@pytest.fixture
def explorer() -> Explorer:
    state = ExplorerState(model="treelstm", size="tiny", batch_size=6, auto_run=True)
    return Explorer(state=state)


def _sizes(fig) -> list[int]:
    return list(fig.select_one({"name": "batches"}).data_source.data["size"])


def test_app_file_composes_a_template_with_every_view():
    spec = importlib.util.spec_from_file_location("explorer_app", ROOT / "apps" / "explorer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, auto_run=True)
    explorer = Explorer(state=state)
    template = module.build_app(explorer)
    assert isinstance(template, pn.template.BootstrapTemplate)
    (main,) = template.main.objects
    assert main.css_classes == ["explorer-main"] and explorer.tabs in main.objects
    classes = [v.css_classes for v in template.sidebar.objects]
    assert classes[:2] == [["model-picker"], ["run-settings"]] and len(classes) == 3
    assert list(explorer.tabs._names) == [v.title for v in explorer_views()]


def test_views_are_registered_once_in_tab_order():
    titles = ["Program", "Passes", "Taint", "DFG", "Schedule", "Timeline", "Compare", "Kernels"]
    assert [v.title for v in explorer_views()] == titles
    with pytest.raises(AcrobatNameError, match="registered twice"):
        register_view("dfg", "Graph", explorer_views()[3].build)


def test_a_registered_view_becomes_a_tab():
    class Sources(LazyView):
        def __init__(self, **params):
            super().__init__(**params)
            self.pane = pn.pane.Markdown("")
            self.watch_state("source")
            self._refresh()

        def __panel__(self):
            return self.pane

        def _refresh(self, *_events):
            self.pane.object = f"{len(self.state.source)} characters"

    register_view("sources", "Sources", Sources)
    try:
        state = ExplorerState(model="treelstm", size="tiny", batch_size=2)
        explorer = Explorer(state=state)
        assert explorer.tab_names[-1] == "Sources" and explorer.tabs._names[-1] == "Sources"
        assert explorer.sources.pane.object == f"{len(state.source)} characters"
        assert explorer.sources.active is False  # hidden: redrawn when its tab opens
        state.source += "\n"
        explorer.open_tab("Sources")
        assert explorer.sources.pane.object == f"{len(state.source)} characters"
    finally:
        unregister_view("sources")
    assert "Sources" not in Explorer(state=state).tab_names


def test_switching_policy_b_in_the_sidebar_changes_the_schedule_view(explorer):
    explorer.open_tab("Schedule")
    fig_a, fig_b = explorer.schedule.figure.children
    before_a, before_b = _sizes(fig_a), _sizes(fig_b)
    explorer.settings.policy_b.value = "eager"
    assert explorer.state.policy_b == "eager"
    new_a, new_b = explorer.schedule.figure.children
    assert _sizes(new_a) == before_a
    assert _sizes(new_b) != before_b
    assert len(_sizes(new_b)) == len(explorer.state.trace_b.of(BatchFormed))
    assert new_b.title.text.startswith("eager:")
    assert "B · eager" in explorer.schedule.summary.object
    explorer.open_tab("Timeline")
    timeline_b = explorer.timeline.figure.children[1]
    assert timeline_b.title.text.startswith("eager:")


def test_hidden_views_redraw_when_their_tab_opens(explorer):
    explorer.open_tab("Schedule")
    before = _sizes(explorer.schedule.figure.children[1])
    timeline = explorer.timeline.figure
    explorer.settings.policy_b.value = "eager"
    assert _sizes(explorer.schedule.figure.children[1]) != before  # the open tab redraws now
    assert explorer.timeline.figure is timeline  # a hidden one waits ...
    explorer.open_tab("Timeline")
    assert explorer.timeline.figure.children[1].title.text.startswith("eager:")  # ... for its tab
    assert [v.active for v in (explorer.schedule, explorer.timeline, explorer.dfg)] == [
        False,
        True,
        False,
    ]


def test_batch_slider_and_optimization_switches(explorer):
    explorer.open_tab("Schedule")
    slider = explorer.settings.batch
    slider.value = 5  # dragging: nothing reruns until the slider is released
    assert explorer.state.batch_size == 6
    with param.edit_constant(slider):
        slider.value_throttled = 2  # what the browser sends on release
    assert explorer.state.batch_size == 2
    explorer.open_tab("DFG")
    assert explorer.dfg.model is not None and explorer.dfg.instance_input.end == 1
    explorer.open_tab("Schedule")
    before = len(_sizes(explorer.schedule.figure.children[0]))
    switches = explorer.settings.optimizations
    switches.value = [name for name in switches.value if name != "coarsening"]
    assert explorer.state.disabled == ("coarsening",)
    assert len(_sizes(explorer.schedule.figure.children[0])) > before


def test_dfg_view_controls(explorer):
    explorer.open_tab("DFG")
    dfg = explorer.dfg
    by_depth = {node.color for node in dfg.model.nodes}
    dfg.color_by = "batch"
    assert dfg.model.color_by == "batch" and "batch 0" in dfg.legend.object
    assert {node.color for node in dfg.model.nodes} != by_depth or len(by_depth) == 1
    dfg.instance = 1
    assert dfg.model.instance == 1
    dfg.fold_above = 3
    assert dfg.model.folded and "folded" in dfg.legend.object
    nodes = dfg.figure.select_one({"name": "nodes"}).data_source
    assert len(nodes.data["id"]) == len(dfg.model.nodes)
    dfg.side = "B"
    assert dfg.model.total_nodes > 0


def test_passes_view_diffs_the_chosen_stages(explorer):
    explorer.open_tab("Passes")
    passes = explorer.passes
    full = passes.diff.object
    assert "diff-add" in full
    passes.show(2, 2)
    assert "print the same IR" in passes.diff.object
    passes.show(0, len(passes.stage_a.options) - 1)
    assert passes.diff.object == full
    assert passes.table.object.count("<tr>") == len(passes.stage_a.options)


def test_taint_and_kernel_views(explorer):
    explorer.open_tab("Taint")
    assert "taint-instance" in explorer.taint.program.object
    explorer.open_tab("Kernels")
    kernels = explorer.kernels
    names = [e.kernel for e in explorer.state.trace_a.of(KernelCompiled)]
    assert kernels.kernel.options == names
    first = kernels.code.object
    kernels.kernel.value = names[-1]
    assert kernels.code.object != first and f"kernel_{names[-1]}" in kernels.code.object
    assert "make" in kernels.host.object and "host-program" in kernels.host.css_classes


def test_compare_buttons(explorer):
    explorer.open_tab("Compare")
    compare = explorer.compare
    compare.policies_button.clicks += 1
    assert len(explorer.state.comparison) == 4
    grid = compare.figure
    latency = grid.children[0][0]
    assert len(latency.renderers[0].data_source.data["label"]) == 4
    compare.options_button.clicks += 1
    assert "no fusion" in compare.table.object


def test_compare_rows_come_and_go_on_a_served_page(explorer):
    """In a served document (as `panel serve` builds it), filling and clearing the Compare
    tab and switching tabs raises nothing: toggling ``visible`` on its Bokeh pane made
    Panel 1.9 copy the figure's stylesheet objects into a string-only list (TypeError),
    which aborted the tab switch (seen in the browser tests: "B · eager" never shown)."""
    from bokeh.document import Document

    spec = importlib.util.spec_from_file_location("explorer_app", ROOT / "apps" / "explorer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build_app(explorer).server_doc(Document())
    compare = explorer.compare
    for _ in range(2):
        explorer.open_tab("Compare")
        compare.policies_button.clicks += 1
        assert compare.figure is not None
        explorer.open_tab("Schedule")
        compare.log_scale = not compare.log_scale  # redrawn when the tab opens again
        explorer.open_tab("Compare")
        compare.clear_button.clicks += 1
        assert compare.figure is None


def test_perfetto_download_is_a_valid_chrome_trace_of_the_session(explorer):
    files = explorer.files
    assert files.download_chrome.filename == "acrobat-treelstm-acrobat-dynet-depth.perfetto.json"
    doc = json.loads(files._chrome_file().getvalue())
    assert check_chrome_trace(doc) == []
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {
        1: "run 1: acrobat",
        2: "run 2: dynet-depth",
        3: "compile (passes end to end)",
    }
    state = explorer.state
    for pid, trace in ((1, state.trace_a), (2, state.trace_b)):
        batches = [e for e in doc["traceEvents"] if e["pid"] == pid and e.get("cat") == "batch"]
        assert len(batches) == len(trace.of(BatchFormed))


def test_trace_download_and_upload(explorer):
    files = explorer.files
    text = files._file().getvalue()
    assert text == explorer.state.trace_text()
    assert files.download.filename == "acrobat-treelstm-acrobat-dynet-depth.jsonl"
    other = Explorer(state=ExplorerState(model="birnn", size="tiny"))
    other.files.upload.value = {"shared.jsonl": text.encode()}
    assert other.state.trace_a.events == explorer.state.trace_a.events
    other.open_tab("Schedule")
    assert other.schedule.figure is not None
    assert "shared.jsonl" in other.status.summary.object
    # the file carried the page's settings: the sidebar and source follow it
    assert (other.state.model, other.state.size) == ("treelstm", "tiny")
    assert other.state.source == explorer.state.source and other.state.viewing == ""
    other.files.upload.value = {"junk.txt": b"\x00garbage"}
    assert "junk.txt" in other.state.run_error


def test_an_upload_over_the_limit_is_refused_and_the_page_keeps_working(explorer, monkeypatch):
    from acrobat.viz import run_panels

    monkeypatch.setattr(run_panels, "UPLOAD_LIMIT", 1000)
    shown = explorer.state.trace_a
    assert explorer.files.open_bytes("big.jsonl", b"x" * 1001) is False
    assert explorer.files.refused.visible and "big.jsonl is" in explorer.files.refused.object
    assert explorer.state.trace_a is shown and explorer.state.run_error == ""
    explorer.state.policy_b = "eager"  # still answers
    assert explorer.state.trace_b is not None and explorer.files.open_bytes("ok.jsonl", b"")
    assert not explorer.files.refused.visible


def test_broken_program_shows_the_error_and_the_app_keeps_answering(explorer):
    explorer.open_tab("Schedule")  # the editor sits in Program, but the view should follow
    editor = explorer.program.editor
    editor._editor.value = BROKEN
    editor._button.clicks += 1
    assert editor._alert.visible and "line 2" in editor._alert.object
    assert explorer.schedule.figure is None and explorer.state.trace_a is None
    explorer.settings.policy_b.value = "eager"  # still answers, still nothing to run
    editor._editor.value = models.source("treelstm")
    editor._button.clicks += 1
    assert not editor._alert.visible
    assert explorer.schedule.figure.children[1].title.text.startswith("eager:")


def test_treelstm_small_batch_64_compiles_runs_and_renders_in_seconds():
    """TreeLSTM small, 64 instances: compile + run + render, and a policy switch (timed for
    the log)."""
    started = time.perf_counter()
    state = ExplorerState(model="treelstm", size="small", batch_size=64, auto_run=True)
    explorer = Explorer(state=state)
    root = pn.panel(explorer).get_root()  # the Bokeh models the browser would receive
    built = time.perf_counter() - started
    explorer.open_tab("Schedule")
    started = time.perf_counter()
    explorer.settings.policy_b.value = "dynet-agenda"
    switched = time.perf_counter() - started
    print(
        f"\ntreelstm small x64: store+compile+run A/B+all views+bokeh root {built:.2f} s "
        f"(compile {state.timings['compile_ms']:.0f} ms, run A {state.timings['run_a_ms']:.0f} ms,"
        f" run B {state.timings['run_b_ms']:.0f} ms); switch policy B + redraw {switched:.2f} s"
    )
    assert root is not None  # times are printed, never asserted: a busy machine is slower
    assert explorer.schedule.figure.children[1].title.text.startswith("dynet-agenda")


def test_a_schedule_bar_click_outlines_its_batch_in_the_dfg(explorer):
    """The linked views: a tapped bar sets state.selected_batch; the DFG view switches to that
    run and one of the batch's instances, outlines the batch's boxes and lists its details."""
    state = explorer.state
    explorer.open_tab("Schedule")
    fig_a, fig_b = explorer.schedule.figure.children
    assert fig_a.x_range is fig_b.x_range  # A and B share the batch axis
    bars = fig_b.select_one({"name": "batches"}).data_source
    last = len(bars.data["size"]) - 1
    bars.selected.indices = [last]  # what the browser sends when the bar is tapped
    assert state.selected_batch == ("B", last)
    assert f'data-batch="{last}"' in explorer.schedule.details.object
    explorer.open_tab("DFG")
    dfg = explorer.dfg
    batch = [r for r in state.trace_b.of(NodeRecorded) if r.batch == last]
    assert dfg.side == "B" and dfg.instance in {r.instance for r in batch}
    nodes = dfg.figure.select_one({"name": "nodes"}).data_source.data
    outlined = {i for i, hit in zip(nodes["id"], nodes["in_batch"]) if hit}
    assert outlined and outlined == set(dfg.highlighted)
    mine = {r.node for r in batch if r.instance == dfg.instance}
    assert {m for n in dfg.model.nodes if n.id in outlined for m in n.members} == mine
    instances = ",".join(str(i) for i in sorted({r.instance for r in batch}))
    assert f'data-instances="{instances}"' in dfg.details.object
    assert "source lines" in dfg.details.object and "treelstm.py" in dfg.details.object
    dfg.all_instances = True  # every instance: every node of the batch is outlined
    nodes = dfg.figure.select_one({"name": "nodes"}).data_source.data
    hits = [n for n in dfg.model.nodes if n.id in set(dfg.highlighted)]
    assert {m for n in hits for m in n.members} == {r.node for r in batch}
    tapped = nodes["id"].index(hits[0].id)
    dfg.figure.select_one({"name": "nodes"}).data_source.selected.indices = [tapped]
    assert state.selected_node == ("B", hits[0].members[0])
    assert f'data-node="{hits[0].members[0]}"' in dfg.details.object
    explorer.settings.policy_a.value = "eager"  # a new run ends the selection
    assert state.selected_batch is None and state.selected_node is None


def test_a_timeline_click_selects_the_batch_for_the_dfg_and_schedule(explorer):
    from types import SimpleNamespace

    state = explorer.state
    explorer.open_tab("Timeline")
    fig = explorer.timeline.figure.children[1]  # run B
    data = fig.select_one({"name": "bars"}).data_source.data
    row = next(i for i, kind in enumerate(data["kind"]) if kind == "kernel")
    lanes = list(fig.y_range.factors)
    x = (data["start_ms"][row] + data["end_ms"][row]) / 2
    y = lanes.index(data["lane"][row]) + 0.5
    explorer.timeline._tapped("B", fig)(SimpleNamespace(x=x, y=y))
    batch = data["batch"][row]  # the schedule's number (its hover: "3 (launch 4)")
    assert data["batch_text"][row] == f"{batch} (launch {batch + 1})"
    assert state.selected_batch == ("B", batch)
    formed = [b for b in state.trace_b.of(BatchFormed)]
    assert formed[batch].kernel == data["kernel"][row]  # the schedule's batch number
    explorer.open_tab("Schedule")
    assert f'data-batch="{batch}"' in explorer.schedule.details.object
    explorer.timeline._tapped("B", fig)(SimpleNamespace(x=-5.0, y=y))  # empty space: no change
    assert state.selected_batch == ("B", batch)


def test_the_progress_row_keeps_its_place_while_idle(explorer):
    """The status line's progress row is hidden in place (CSS visibility), never taken out of
    the layout, so the tabs under it stay put when a run starts or ends."""
    working = explorer.status.working
    assert working.visible
    explorer.state.busy = True
    assert working.styles["visibility"] == "visible"
    explorer.state.busy = False
    assert working.styles["visibility"] == "hidden"
