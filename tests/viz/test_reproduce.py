"""The explorer's runs are the command line's: the "Reproduce" commands it shows, run by
``python -m acrobat.bench run``, give the same nodes and launches as the traces it drew."""

from __future__ import annotations

import json
import shlex

from acrobat import models
from acrobat.bench.__main__ import main
from acrobat.viz.app_state import ExplorerState


def _stats(trace) -> dict:
    return [e for e in trace.events if e.kind == "RunSummary"][-1].stats


def test_the_reproduce_commands_give_the_explorers_nodes_and_launches(capsys):
    state = ExplorerState(
        model="treelstm", size="tiny", batch_size=6, seed=3, repeats=1, policy_b="eager"
    )
    state.optimizations = [n for n in state.optimizations if n != "fusion"]
    assert state.run(), state.run_error
    commands = state.reproduce.splitlines()
    assert len(commands) == 2 and "--disable fusion" in commands[0]
    for command, trace in zip(commands, (state.trace_a, state.trace_b)):
        words = shlex.split(command)
        assert words[:4] == ["python", "-m", "acrobat.bench", "run"]
        assert main(words[3:]) == 0
        row = json.loads(capsys.readouterr().out.splitlines()[-1])
        stats = _stats(trace)
        assert (row["nodes"], row["launches"]) == (stats["nodes"], stats["launches"]), command


def test_an_edited_source_keeps_its_own_sizes_and_has_no_command():
    state = ExplorerState(model="birnn", size="tiny", batch_size=2, repeats=1)
    source = models.source("birnn").replace('H = Size("H", 256)', 'H = Size("H", 24)')
    assert source != models.source("birnn")
    state.source = source
    assert state.compile(), state.error
    assert state.sizes_used["H"] == 24 and "Tensor[24]" in state.ir_text
    assert state.run(), state.run_error
    assert state.reproduce == ""
