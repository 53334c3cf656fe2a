"""The explorer's smaller points (issue 16, item 7): optimization labels, the error alert,
backends that cannot run, the taint view's stages, long lines."""

from __future__ import annotations

import pytest

import acrobat
from acrobat.passes.options import CompileOptions
from acrobat.trace import PassApplied, StageTaint, Trace
from acrobat.viz import panels, runner
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.explorer import Explorer
from acrobat.viz.ir_view import pass_rows, pass_table_html
from acrobat.viz.taint_view import (
    default_stage,
    taint_html,
    taint_legend_html,
    taint_rows,
    taint_stages,
    taint_table_html,
)


@pytest.fixture
def explorer() -> Explorer:
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, auto_run=True)
    return Explorer(state=state)


def test_optimizations_show_human_labels_with_what_they_do(explorer):
    switches = explorer.settings.optimizations
    assert list(switches.boxes) == list(runner.optimization_names())
    fusion = switches.boxes["fusion"]
    assert fusion.label == "Op fusion" == CompileOptions.switch("fusion").label
    assert all("_" not in box.label for box in switches.boxes.values())
    tip = switches.tips["fusion"].value
    assert CompileOptions.switch("fusion").what in tip and "FuseOps" in tip
    # the store keeps field names; a box and the store follow each other
    fusion.value = False
    assert explorer.state.disabled == ("fusion",) and "fusion" not in switches.value
    explorer.state.optimizations = list(runner.optimization_names())
    assert fusion.value is True
    switches.value = [n for n in switches.value if n != "coarsening"]
    assert explorer.state.disabled == ("coarsening",)
    assert switches.boxes["coarsening"].value is False


def test_every_default_switch_is_offered_leveling_included():
    assert "leveling" in runner.optimization_names()
    assert set(runner.optimization_names()) == {
        s.name for s in CompileOptions.switches() if s.default
    }


def test_passes_tab_names_the_switch_of_each_pass(treelstm):
    rows = {r["name"]: r for r in pass_rows(treelstm.compile)}
    assert rows["FuseOps"]["switches"] == ("Op fusion", "Static depth hoisting")
    assert rows["CoarsenGrains"]["switches"] == ("Grain coarsening",)
    assert rows["ToANF"]["switches"] == ()
    table = pass_table_html(list(rows.values()))
    assert "switched by</span></th>" in table
    assert "<code>CoarsenGrains</code><div class='switches'>Grain coarsening</div>" in table
    assert "always on" in table


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of a ``#rrggbb`` colour."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_ratio_is_the_wcag_formula():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_error_alert_shows_the_location_once_readable_and_wrapping(explorer):
    state = explorer.state
    state.source = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"
    state.compile()
    alert = explorer.program.editor._alert
    assert alert.visible
    text = alert.object
    assert text.count("2:14") == 0 and text.count("line 2, column 14") == 1
    assert "edited.py: line 2, column 14" in text  # not the model's file name
    assert '<pre class="error-message">AcrobatSyntaxError: not valid Python syntax' in text
    css = alert.stylesheets[0]
    assert "white-space: pre-wrap" in css and "monospace" in css
    assert contrast(panels.ERROR_TEXT, panels.ERROR_BACKGROUND) >= 7
    assert contrast(panels.ERROR_ACCENT, panels.ERROR_BACKGROUND) >= 4.5
    for colour in (panels.ERROR_TEXT, panels.ERROR_ACCENT, panels.ERROR_BACKGROUND):
        assert colour in css
    state.source = "def main(x: Tensor[4]) -> Tensor[4]:\n    return tanh(x)\n"
    state.compile()
    assert not alert.visible


def test_error_without_a_location_says_so_once():
    text = panels.error_html("AcrobatError: no entry", None, None)
    assert "compile error" in text and text.count("AcrobatError") == 1
    assert "&lt;b&gt;" in panels.error_html("<b>", 1, 0)


@pytest.fixture
def no_device():
    """A registered backend that cannot run here (as cupy without CUDA), removed afterwards."""
    from acrobat.backends import register_backend, unregister_backend
    from acrobat.errors import BackendUnavailableError

    def build():
        raise BackendUnavailableError("no CUDA device", hint="use backend='numpy'")

    register_backend("nodevice", build, check=lambda: (False, "no CUDA device"), doc="test")
    try:
        yield "nodevice"
    finally:
        unregister_backend("nodevice")


def test_unavailable_backend_is_disabled_with_its_reason_in_view(no_device):
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2)
    settings = Explorer(state=state).settings
    assert no_device in settings.backend.disabled_options
    assert "nodevice: no CUDA device" in settings.backend_note.object
    assert "nodevice: no CUDA device" in runner.backend_note("numpy")
    assert "auto runs on" not in settings.backend_note.object
    state.backend = "auto"
    assert "auto runs on" in settings.backend_note.object


def test_a_run_failing_for_its_backend_names_the_backend_not_the_program(no_device):
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, backend=no_device)
    assert not state.run()
    assert state.run_error.startswith("the nodevice backend cannot run here: no CUDA device")
    assert "program" not in state.run_error
    assert not state.compare_policies()
    assert state.run_error.startswith("the nodevice backend cannot run here")


@pytest.mark.filterwarnings("ignore::acrobat.backends.BackendFallbackWarning")
def test_auto_says_what_it_picked():
    picked, why = runner.auto_backend()
    infos = {b.name: b for b in acrobat.backends()}
    assert picked == ("cupy" if infos["cupy"].available else "numpy")
    note = runner.backend_note("auto")
    assert note.splitlines()[0] == f"auto runs on {picked} ({why})"
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, backend="auto")
    assert state.run()
    assert f"auto → {picked}" in state.origin


def test_taint_stages_default_to_before_fusion_and_offer_the_compiled_program(stackrnn):
    stages = taint_stages(stackrnn.compile)
    labels = [s.label for s in stages]
    assert labels[0] == "0 · parsed" and labels[-1].endswith("(compiled)")
    before = stages[default_stage(stages)]
    assert before.label.endswith("(before fusion)") and not before.compiled
    passes = stackrnn.compile.of(PassApplied)
    assert passes[before.index].name == "FuseOps"  # the stage FuseOps starts from
    assert before.text == passes[before.index - 1].after
    # StackRNN's %depth: tensor-dependent (the parse decides it), not "weights only"
    assert before.classes["parse"]["depth"] == "tensor-dependent"
    page = taint_html(stackrnn.compile, stage=before)
    assert 'class="taint-tensor-dependent" title="depth: tensor-dependent">%depth' in page
    legend = taint_legend_html(stackrnn.compile, before)
    assert "weights only" not in legend and "by which branch ran" in legend
    assert "+ 6 weights" in legend  # _tab0 (rows of E W_s^T), U_s, b_s, W_r, b_r, w_t
    # fibers are the compiled program's: an earlier stage shows none
    assert "<td>—</td>" in taint_table_html(stackrnn.compile, before)
    assert "<td>yes</td>" in taint_table_html(stackrnn.compile, stages[-1])


def test_treelstm_before_fusion_classifies_the_ops_the_fused_program_hides(treelstm):
    stages = taint_stages(treelstm.compile)
    before, compiled = stages[default_stage(stages)], stages[-1]
    assert len(taint_rows(treelstm.compile, before)) > len(taint_rows(treelstm.compile, compiled))


def test_a_trace_without_stage_events_shows_the_compiled_program(treelstm):
    old = Trace([e for e in treelstm.compile.events if not isinstance(e, StageTaint)])
    stages = taint_stages(old)
    assert len(stages) == 1 and stages[0].compiled and default_stage(stages) == 0


def test_taint_tab_picks_a_stage(explorer):
    explorer.state.model = "stackrnn"
    explorer.open_tab("Taint")
    view = explorer.taint
    assert view.stage.value is not None
    label = {v: k for k, v in view.stage.options.items()}[view.stage.value]
    assert label.endswith("(before fusion)")
    assert "%depth" in view.program.object and "tensor-dependent" in view.program.object
    view.show_stage("(compiled)")
    assert "kernel @" in view.program.object and "<td>yes</td>" in view.table.object
    view.show_stage("parsed")
    assert "as parsed" in view.stage_note.object


def test_stage_taint_survives_a_saved_session(stackrnn):
    from acrobat.viz.trace_bundle import dumps, join_traces, loads, split_trace

    text = dumps(join_traces(stackrnn.compile, stackrnn.runs["acrobat"]))
    bundle = split_trace(loads(text))
    assert len(bundle.runs) == 1
    assert [s.label for s in taint_stages(bundle.compile)] == [
        s.label for s in taint_stages(stackrnn.compile)
    ]
