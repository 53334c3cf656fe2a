"""The explorer's smaller points (issue 16, item 7): optimization labels, the error alert,
backends that cannot run, the taint view's stages, long lines."""

from __future__ import annotations

import pytest

from acrobat.passes.options import CompileOptions
from acrobat.viz import runner
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.explorer import Explorer
from acrobat.viz.ir_view import pass_rows, pass_table_html


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


def test_opt_in_leveling_is_not_offered_as_a_switch_the_explorer_cannot_turn_on():
    assert "leveling" not in runner.optimization_names()
    assert set(runner.optimization_names()) == {
        s.name for s in CompileOptions.switches() if s.default
    }


def test_passes_tab_names_the_switch_of_each_pass(treelstm):
    rows = {r["name"]: r for r in pass_rows(treelstm.compile)}
    assert rows["FuseOps"]["switches"] == ("Op fusion", "Static depth hoisting")
    assert rows["CoarsenGrains"]["switches"] == ("Grain coarsening",)
    assert rows["ToANF"]["switches"] == ()
    table = pass_table_html(list(rows.values()))
    assert "<th>switched by</th>" in table and "Grain coarsening" in table
    assert "always on" in table
