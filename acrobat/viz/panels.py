"""Panel viewers over an ``ExplorerState``: model picker, source editor, IR view (and the
Program tab that holds those two side by side).

(The run settings, the trace files and the views of a run are in ``acrobat.viz.run_panels``,
``acrobat.viz.compile_panels`` and ``acrobat.viz.view_panels``.)

Each viewer only displays the store's parameters and writes user input back into it; the logic
(what to load, how to compile) lives in ``acrobat.viz.app_state``. Every asset is one Panel
bundles (Ace for the source editor; the IR is highlighted on the server), so the page renders
with no internet access.
"""

from __future__ import annotations

import html
import re

import panel as pn
import param

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.highlight import IR_CSS, highlight_ir, scroll_box

EDITOR_HEIGHT = 560

# The compile error: the location once, then the message in a monospace block that wraps.
# Colours meet WCAG AA (contrast >= 4.5:1 for text; tests/viz/test_small_points.py checks):
# ERROR_TEXT on ERROR_BACKGROUND about 15:1, ERROR_ACCENT on ERROR_BACKGROUND about 7:1.
ERROR_BACKGROUND = "#fff5f5"
ERROR_TEXT = "#1f2328"
ERROR_ACCENT = "#a40e26"
ERROR_CSS = f"""
div.compile-error-box {{ background: {ERROR_BACKGROUND}; color: {ERROR_TEXT};
  border: 1px solid #f0b8be; border-left: 4px solid {ERROR_ACCENT}; border-radius: 4px;
  padding: 8px 12px; margin: 0; }}
.compile-error-box .error-where {{ color: {ERROR_ACCENT}; font-weight: 600; margin: 0 0 6px 0; }}
.compile-error-box pre.error-message {{ font-family: ui-monospace, 'DejaVu Sans Mono', monospace;
  font-size: 12.5px; line-height: 1.45; color: {ERROR_TEXT}; background: transparent;
  margin: 0; padding: 0; white-space: pre-wrap; overflow-wrap: anywhere; }}
"""
# "treelstm.py:2:14: " at the start of an error's text: the location, shown once above it
_LOCATION = re.compile(r"^(?P<file>[^\s:]*):\d+:\d+: ")


def error_html(message: str, line: int | None, col: int | None) -> str:
    """The compile error as HTML: where it is (once), then the message as monospace text
    that wraps; the ``file:line:col:`` prefix of the message is not repeated."""
    where = "compile error"
    if line is not None:
        where = f"line {line}, column {col or 0}"
        located = _LOCATION.match(message)
        if located:
            where = f"{located['file']}: {where}"
            message = message[located.end() :]
    return (
        f'<div class="compile-error-box" role="alert">'
        f'<div class="error-where">{html.escape(where)}</div>'
        f'<pre class="error-message">{html.escape(message)}</pre></div>'
    )


class ModelPicker(pn.viewable.Viewer):
    """Sidebar: choose the model and its size; shows the catalog description and features."""

    state = param.ClassSelector(class_=ExplorerState)

    def __panel__(self):
        model = pn.widgets.Select.from_param(
            self.state.param.model, label="Model", sizing_mode="stretch_width"
        )
        size = pn.widgets.Select.from_param(
            self.state.param.size, label="Size", sizing_mode="stretch_width"
        )
        about = pn.pane.Markdown(
            pn.bind(self._about, self.state.param.model), css_classes=["about"]
        )
        return pn.Column(
            model, about, size, css_classes=["model-picker"], sizing_mode="stretch_width"
        )

    def _about(self, _model: str) -> str:
        info = self.state.info
        features = ", ".join(info.features)
        return f"{html.escape(info.description)}\n\n*Control flow:* {html.escape(features)}"


class SourceEditor(pn.viewable.Viewer):
    """The program text in an editor with a Compile button; errors appear above it (where,
    once, and the message) and as an annotation on the line."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        super().__init__(**params)
        self._editor = pn.widgets.CodeEditor(
            value=self.state.source,
            language="python",
            sizing_mode="stretch_width",
            height=EDITOR_HEIGHT,
            css_classes=["source-editor"],
        )
        self._button = pn.widgets.Button(
            label="Compile", color="primary", css_classes=["compile-button"]
        )
        self._button.on_click(self._compile)
        self._alert = pn.pane.HTML(
            "",
            visible=False,
            stylesheets=[ERROR_CSS],
            sizing_mode="stretch_width",
            css_classes=["compile-error"],
        )
        self.state.param.watch(self._show_source, "source")
        self.state.param.watch(self._show_error, "error")
        self._show_error()

    def __panel__(self):
        return pn.Column(self._button, self._alert, self._editor, sizing_mode="stretch_width")

    def _compile(self, _event=None) -> None:
        self.state.param.update(source=self._editor.value, viewing="")
        self.state.request_compile()

    def _show_source(self, event: param.parameterized.Event) -> None:
        self._editor.value = event.new

    def _show_error(self, _event=None) -> None:
        state = self.state
        if not state.error:
            self._alert.param.update(object="", visible=False)
            self._editor.annotations = []
            return
        text = error_html(state.error, state.error_line, state.error_col)
        self._alert.param.update(object=text, visible=True)
        if state.error_line:
            row, column = state.error_line - 1, state.error_col or 0
            mark = {"row": row, "column": column, "text": state.error, "type": "error"}
            self._editor.annotations = [mark]


class IRView(pn.viewable.Viewer):
    """The compiled IR text, highlighted on the server, with the sizes it was compiled at."""

    state = param.ClassSelector(class_=ExplorerState)

    def __panel__(self):
        header = pn.pane.Markdown(
            pn.bind(self._header, self.state.param.sizes_used, self.state.param.error),
            css_classes=["ir-header"],
        )
        code = pn.pane.HTML(
            pn.bind(highlight_ir, self.state.param.ir_text),
            stylesheets=[IR_CSS, scroll_box(EDITOR_HEIGHT)],
            sizing_mode="stretch_width",
            visible=pn.bind(bool, self.state.param.ir_text),
            css_classes=["ir-view"],
        )
        return pn.Column(header, code, sizing_mode="stretch_width")

    @staticmethod
    def _header(sizes: dict, error: str) -> str:
        if error:
            return "**IR** — not compiled: fix the error in the source"
        bound = ", ".join(f"{name}={value}" for name, value in sizes.items()) or "declared defaults"
        return f"**IR** — sizes {bound}"


class ProgramView(pn.viewable.Viewer):
    """The Program tab: the source editor beside the IR it compiles to."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        super().__init__(**params)
        self.editor = SourceEditor(state=self.state)
        self.ir = IRView(state=self.state)

    def __panel__(self):
        return pn.Row(self.editor, self.ir, sizing_mode="stretch_width")
