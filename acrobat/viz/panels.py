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

import panel as pn
import param

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.highlight import IR_CSS, highlight_ir

EDITOR_HEIGHT = 560


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
    """The program text in an editor with a Compile button; errors appear inline, in red."""

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
        self._alert = pn.pane.Alert(
            "", alert_type="danger", visible=False, css_classes=["compile-error"]
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
        where = f"line {state.error_line}, column {state.error_col}"
        if state.error_line is None:
            where = "compile error"
        message = html.escape(state.error)
        self._alert.param.update(object=f"<b>{where}</b>: <code>{message}</code>", visible=True)
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
            stylesheets=[IR_CSS],
            sizing_mode="stretch_width",
            max_height=EDITOR_HEIGHT,
            styles={"overflow": "auto"},
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
