"""ExplorerState without a browser: set parameters, assert on the IR text and the error."""

import html
import re

import pytest

from acrobat import models
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.highlight import highlight_ir

BROKEN = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"


@pytest.fixture
def state() -> ExplorerState:
    return ExplorerState(model="treelstm", size="small")


def test_default_model_compiles_to_ir(state):
    assert state.model in [info.name for info in models.catalog()]
    assert state.error == ""
    assert state.source == models.source("treelstm")
    assert "def @main" in state.ir_text
    assert state.sizes_used == models.sizes("treelstm", "small")


def test_size_change_reloads_and_changes_shapes(state):
    small = state.ir_text
    hidden = models.sizes("treelstm", "tiny")["H"]
    state.size = "tiny"
    assert state.ir_text != small
    assert f"Tensor[{hidden}]" in state.ir_text
    assert f"Tensor[{hidden}]" not in small
    assert state.sizes_used == models.sizes("treelstm", "tiny")


def test_model_change_reloads_source(state):
    others = [info.name for info in models.catalog() if info.name != "treelstm"]
    if not others:
        pytest.skip("the catalog has one model only")
    state.model = others[0]
    assert state.source == models.source(others[0])
    assert state.error == "" and "def @main" in state.ir_text


def test_every_catalog_model_compiles_at_every_size(state):
    for info in models.catalog():
        for size in info.sizes:
            state.param.update(model=info.name, size=size)
            assert state.error == "", f"{info.name}/{size}: {state.error}"
            assert state.source == models.source(info.name)
            assert "def @main" in state.ir_text


def test_broken_source_sets_error_with_line_and_does_not_raise(state):
    state.source = BROKEN
    assert state.compile() is False
    assert state.ir_text == ""
    assert state.error_line == 2
    assert re.search(r":2:\d+: AcrobatSyntaxError", state.error)


def test_recovers_after_an_error(state):
    state.source = BROKEN
    state.compile()
    state.source = models.source("treelstm")
    assert state.compile() is True
    assert state.error == "" and state.error_line is None
    assert "def @main" in state.ir_text


def test_edit_removing_a_declared_size_still_compiles(state):
    state.size = "tiny"
    hidden = models.sizes("treelstm", "tiny")["H"]
    state.source = (
        "H = Size('H', 256)\n"
        "W: Param[H, H]\n"
        "def main(x: Tensor[H]) -> Tensor[H]:\n"
        "    return tanh(matmul(W, x))\n"
    )
    assert state.compile(), state.error
    assert state.sizes_used == {"H": hidden}
    assert f"Tensor[{hidden}]" in state.ir_text


def test_internal_crash_is_shown_not_raised(state, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("frontend bug")

    monkeypatch.setattr("acrobat.viz.app_state.parse", crash)
    assert state.compile() is False
    assert "internal error" in state.error and "frontend bug" in state.error
    assert state.ir_text == "" and state.error_line is None


@pytest.mark.parametrize(
    "payload",
    [
        '__import__("os").system("touch {sentinel}")',
        'open("{sentinel}", "w").write("x")',
        'x = __import__("os").system("touch {sentinel}")',
        'H = Size("H", __import__("os").system("touch {sentinel}"))',
    ],
)
def test_source_is_never_executed(state, tmp_path, payload):
    sentinel = tmp_path / "SENTINEL"
    body = payload.format(sentinel=sentinel)
    state.source = f"{body}\ndef main(x: Tensor[4]) -> Tensor[4]:\n    {body}\n    return x\n"
    assert state.compile() is False
    assert state.error
    assert not sentinel.exists()


def test_highlight_keeps_every_character():
    ir = models.parse_model("treelstm", "tiny").pretty()
    page = highlight_ir(ir + '<script>alert("x")</script>')
    assert "<script>" not in page
    assert html.unescape(re.sub(r"<[^>]+>", "", page)) == ir + '<script>alert("x")</script>'
    assert '<span class="ir-global">@main</span>' in page
