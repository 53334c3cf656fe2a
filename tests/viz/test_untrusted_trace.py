"""A trace file from anywhere reaches the page only escaped: every string of a real session
trace is given markup (a ``<script>`` and an ``<img onerror>``), the file is opened, and every
view's HTML is searched for that markup unescaped. (tests/e2e checks the same in Chromium.)"""

from __future__ import annotations

import json

import panel as pn
import pytest
from bokeh.models import Div

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.explorer import Explorer

MARKUP = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def poisoned(value):
    """``value`` with ``MARKUP`` before every string in it (dict keys and event kinds kept)."""
    if isinstance(value, str):
        return MARKUP + value
    if isinstance(value, list):
        return [poisoned(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k == "event" else poisoned(v) for k, v in value.items()}
    return value


def poisoned_trace_text(state: ExplorerState) -> str:
    """The session ``state`` saved, less its settings (so it opens read-only), poisoned."""
    lines = [json.loads(line) for line in state.trace_text().splitlines()]
    return "".join(json.dumps(poisoned(d)) + "\n" for d in lines if d["event"] != "SessionSettings")


def shown_html(explorer: Explorer) -> list[str]:
    """The HTML of every HTML/Markdown pane and Bokeh Div, with every tab opened once."""
    texts = []
    for title in explorer.tab_names:
        explorer.open_tab(title)
        layout = explorer.views[title]
        root = pn.panel(layout)
        for pane in root.select(lambda o: isinstance(o, (pn.pane.HTML, pn.pane.Markdown))):
            texts.append(str(pane.object or ""))
        for pane in root.select(pn.pane.Bokeh):
            if pane.object is not None:
                texts += [div.text for div in pane.object.select({"type": Div})]
    texts += [str(p.object or "") for p in pn.panel(explorer).select(pn.pane.HTML)]
    return texts


@pytest.fixture(scope="module")
def source_state() -> ExplorerState:
    state = ExplorerState(model="treelstm", size="tiny", batch_size=3, repeats=1)
    assert state.run(), state.run_error
    return state


def test_an_uploaded_trace_with_markup_in_every_string_shows_it_escaped(source_state):
    explorer = Explorer(state=ExplorerState(model="treelstm", size="tiny", batch_size=3))
    state = explorer.state
    assert state.load_trace_text(poisoned_trace_text(source_state), MARKUP + ".jsonl")
    assert state.viewing and state.trace_a is not None, state.run_error
    texts = shown_html(explorer)
    assert any("&lt;script&gt;" in t for t in texts)  # the names were shown, escaped
    for text in texts:
        assert "<script" not in text and "<img" not in text, text[:400]


def test_a_trace_with_markup_in_a_count_is_refused(source_state):
    lines = source_state.trace_text().splitlines()
    events = [json.loads(line) for line in lines]
    batch = next(e for e in events if e["event"] == "BatchFormed")
    batch["size"] = MARKUP
    state = ExplorerState(model="treelstm", size="tiny", batch_size=3)
    text = "".join(json.dumps(e) + "\n" for e in events)
    assert not state.load_trace_text(text, "counts.jsonl")
    assert "BatchFormed.size should be int" in state.run_error
