"""The ipywidgets front end: widgets drive the store; views are the same figure functions."""

from __future__ import annotations

import pytest
from bokeh.plotting import figure

from acrobat.trace import BatchFormed
from acrobat.viz.runner import optimization_names, policy_names
from acrobat.viz.widgets import NOTEBOOK_VIEWS, NotebookExplorer, model_picker, policy_picker, show


@pytest.fixture
def notebook() -> NotebookExplorer:
    return NotebookExplorer(model="treelstm", size="tiny", batch_size=4)


def _shown(notebook) -> str:
    return "".join(out["data"]["text/html"] for out in notebook.output.outputs)


def test_controls_mirror_the_store(notebook):
    state = notebook.state
    assert notebook.model.value == state.model == "treelstm"
    assert notebook.batch.value == 4 and not notebook.batch.continuous_update
    assert list(notebook.options) == list(optimization_names())
    assert all(box.value for box in notebook.options.values())
    assert notebook.policy_a.options == policy_names()
    state.policy_b = "eager"
    assert notebook.policy_b.value == "eager"


def test_policy_picker_changes_the_schedule(notebook):
    before = notebook.figure("schedule").children[1]
    notebook.policy_b.value = "eager"
    after = notebook.figure("schedule").children[1]
    sizes = after.select_one({"name": "batches"}).data_source.data["size"]
    assert before.title.text.startswith("dynet-depth") and after.title.text.startswith("eager")
    assert len(sizes) == len(notebook.state.trace_b.of(BatchFormed))
    assert "<iframe srcdoc=" in _shown(notebook)  # a standalone page, BokehJS inline


def test_sliders_and_checkboxes(notebook):
    notebook.batch.value = 2
    assert notebook.state.batch_size == 2
    notebook.seed.value = 3
    assert notebook.state.seed == 3
    notebook.options["fusion"].value = False
    assert notebook.state.disabled == ("fusion",)
    assert "no fusion" in notebook.state.origin


@pytest.mark.parametrize("view", list(NOTEBOOK_VIEWS))
def test_every_view_draws(notebook, view):
    notebook.view.value = view
    assert notebook.output.outputs, view
    assert notebook.figure(view) is not None


def test_errors_are_shown_above_the_view(notebook):
    notebook.state.source = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"
    notebook.state.compile_and_run()
    assert "AcrobatSyntaxError" in notebook.message.value
    assert notebook.figure("schedule") is None and notebook.output.outputs == ()


def test_show_and_pickers():
    page = show(figure(title="x")).data
    assert page.startswith('<div class="acrobat-figure"><iframe srcdoc=')
    assert "cdn.bokeh.org" not in page
    assert show("<b>hi</b>").data.endswith("<b>hi</b>")
    assert model_picker().value == "treelstm"
    assert policy_picker("eager").value == "eager"
