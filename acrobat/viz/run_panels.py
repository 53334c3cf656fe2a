"""Panel viewers for running: the run settings (sidebar), the status line, trace files.

They only show the store's parameters and write user input back into it; compiling and running
live in ``acrobat.viz.app_state``. Slow work is marked by binding ``loading`` to ``state.busy``.
"""

from __future__ import annotations

import html
import io

import panel as pn
import param

from acrobat.viz import runner
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compile_panels import OptimizationSwitches

BATCH_SLIDER_END = 256
NOTE_CSS = ".backend-note-text { color: #57606a; font-size: 12px; line-height: 1.35; }"


def _note_html(backend: str) -> str:
    """The backend note (``runner.backend_note``) as small grey lines, or "" when none."""
    lines = runner.backend_note(backend).splitlines()
    return "".join(f'<div class="backend-note-text">{html.escape(line)}</div>' for line in lines)


class RunSettings(pn.viewable.Viewer):
    """Sidebar: batch size, seed, backend, policies A and B, optimization switches, Run."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        super().__init__(**params)
        state = self.state
        self.batch = pn.widgets.IntSlider(
            label="Batch size",
            start=1,
            end=max(BATCH_SLIDER_END, state.batch_size),
            value=state.batch_size,
            sizing_mode="stretch_width",
            css_classes=["batch-size"],
        )
        # Rerun when the slider is released, not at every step of a drag.
        self.batch.param.watch(self._set_batch, "value_throttled")
        state.param.watch(lambda e: setattr(self.batch, "value", e.new), "batch_size")
        self.seed = pn.widgets.IntInput.from_param(
            state.param.seed, label="Seed", sizing_mode="stretch_width"
        )
        # Backends that cannot run here are shown greyed out; the note under the picker says
        # why, and what "auto" runs on.
        unavailable = runner.unavailable_backends()
        self.backend = pn.widgets.Select.from_param(
            state.param.backend,
            label="Backend",
            sizing_mode="stretch_width",
            disabled_options=list(unavailable),
            description="; ".join(f"{n}: {why}" for n, why in unavailable.items()) or None,
        )
        self.backend_note = pn.pane.HTML(
            pn.bind(_note_html, state.param.backend),
            css_classes=["backend-note"],
            sizing_mode="stretch_width",
            margin=(0, 10, 5, 10),
            stylesheets=[NOTE_CSS],
        )
        self.policy_a = pn.widgets.Select.from_param(
            state.param.policy_a,
            label="Policy A",
            sizing_mode="stretch_width",
            css_classes=["policy-a"],
        )
        self.policy_b = pn.widgets.Select.from_param(
            state.param.policy_b,
            label="Policy B",
            sizing_mode="stretch_width",
            css_classes=["policy-b"],
        )
        # one checkbox per optimization, by its human label, with a tooltip (compile_panels)
        self.optimizations = OptimizationSwitches(state=state)
        self.run_button = pn.widgets.Button(
            label="Run A and B",
            color="primary",
            css_classes=["run-button"],
            sizing_mode="stretch_width",
            loading=state.param.busy,
        )
        self.run_button.on_click(lambda _event: state.run())

    def _set_batch(self, event: param.parameterized.Event) -> None:
        self.state.batch_size = event.new

    def __panel__(self):
        return pn.Column(
            self.batch,
            self.seed,
            self.backend,
            self.backend_note,
            pn.Row(self.policy_a, self.policy_b, sizing_mode="stretch_width"),
            pn.pane.Markdown("**Optimizations**", margin=(5, 10, 0, 10)),
            self.optimizations,
            self.run_button,
            css_classes=["run-settings"],
            sizing_mode="stretch_width",
        )


class StatusLine(pn.viewable.Viewer):
    """Above the tabs: what the views show, how long it took, and any run error."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        super().__init__(**params)
        self.summary = pn.pane.HTML(
            pn.bind(
                self._summary,
                self.state.param.origin,
                self.state.param.timings,
                self.state.param.error,
            ),
            css_classes=["run-status"],
            sizing_mode="stretch_width",
            margin=(0, 10),
        )
        self.alert = pn.pane.Alert(
            pn.bind(html.escape, self.state.param.run_error),
            alert_type="warning",
            visible=pn.bind(bool, self.state.param.run_error),
            css_classes=["run-error"],
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return pn.Column(self.summary, self.alert, sizing_mode="stretch_width")

    @staticmethod
    def _summary(origin: str, timings: dict, error: str) -> str:
        if error:
            return "<i>Not compiled: fix the error in the Program tab.</i>"
        parts = [f"<b>{html.escape(origin)}</b>" if origin else "<i>not run yet</i>"]
        names = {"compile_ms": "compile", "run_a_ms": "run A", "run_b_ms": "run B"}
        parts += [f"{names[k]} {v:.0f} ms" for k, v in timings.items() if k in names]
        return " · ".join(parts)


class TraceFiles(pn.viewable.Viewer):
    """Sidebar: download this session's traces as JSON Lines, or open a saved one."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        super().__init__(**params)
        self.download = pn.widgets.FileDownload(
            callback=self._file,
            filename="acrobat-trace.jsonl",
            color="default",
            label="Download trace (.jsonl)",
            sizing_mode="stretch_width",
            css_classes=["trace-download"],
        )
        self.upload = pn.widgets.FileInput(
            accept=".jsonl,.json,.txt",
            multiple=False,
            sizing_mode="stretch_width",
            css_classes=["trace-upload"],
        )
        self.upload.param.watch(self._open, "value")
        self.state.param.watch(self._name, ["trace_a", "trace_b"])
        self._name()

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown("**Share a run**", margin=(5, 10, 0, 10)),
            self.download,
            pn.pane.Markdown("Open a saved trace:", margin=(0, 10)),
            self.upload,
            sizing_mode="stretch_width",
        )

    def _file(self) -> io.StringIO:
        return io.StringIO(self.state.trace_text())

    def _name(self, *_events) -> None:
        state = self.state
        self.download.filename = f"acrobat-{state.model}-{state.policy_a}-{state.policy_b}.jsonl"

    def _open(self, event: param.parameterized.Event) -> None:
        if event.new is None:
            return
        text = event.new.decode("utf-8", errors="replace")
        self.state.load_trace_text(text, self.upload.filename or "uploaded trace")
