"""Panel viewers for running: the run settings (sidebar), the status line, trace files.

They only show the store's parameters and write user input back into it; compiling and running
live in ``acrobat.viz.app_state`` (on its worker thread in the app). While work is in flight the
status line shows a progress bar, what is being done, and a Cancel button.
"""

from __future__ import annotations

import html
import io
import json

import panel as pn
import param

from acrobat.trace import chrome_trace
from acrobat.viz import runner
from acrobat.viz.app_state import MAX_UPLOAD_MB, ExplorerState, RunTiming
from acrobat.viz.compile_panels import OptimizationSwitches
from acrobat.viz.upload import BoundedFileDropper

UPLOAD_LIMIT = MAX_UPLOAD_MB * 1024 * 1024

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
        self._slider_batch = state.batch_size  # the batch the slider shows
        self.batch.param.watch(self._set_batch, "value_throttled")
        state.param.watch(self._show_batch, "batch_size")
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
        self.repeats = pn.widgets.IntInput.from_param(
            state.param.repeats,
            label="Timed repeats",
            sizing_mode="stretch_width",
            description="Each policy runs once to warm up, then this many times, interleaved; "
            "times are medians with their interquartile range.",
            css_classes=["repeats"],
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
        self.run_button.on_click(lambda _event: state.request_run())
        # a file shown read-only is not the sidebar's model: running it would mislead
        state.param.watch(self._viewing, "viewing")

    def _viewing(self, event: param.parameterized.Event) -> None:
        self.run_button.disabled = bool(event.new)

    def _set_batch(self, event: param.parameterized.Event) -> None:
        self._slider_batch = event.new
        self.state.batch_size = event.new

    def _show_batch(self, event: param.parameterized.Event) -> None:
        """A batch set elsewhere (a file, a lowered default) moves the slider. One the slider
        set is not sent back: keys pressed fast would have the browser's slider jump back to
        an older value while the newest one runs."""
        if event.new != self._slider_batch:
            self._slider_batch = event.new
            self.batch.value = event.new

    def __panel__(self):
        return pn.Column(
            self.batch,
            self.seed,
            self.backend,
            self.backend_note,
            pn.Row(self.policy_a, self.policy_b, sizing_mode="stretch_width"),
            self.repeats,
            pn.pane.Markdown("**Optimizations**", margin=(5, 10, 0, 10)),
            self.optimizations,
            self.run_button,
            css_classes=["run-settings"],
            sizing_mode="stretch_width",
        )


def _message(text: param.Parameter, kind: str, css: str) -> pn.pane.Alert:
    """An alert showing a store's text parameter (escaped), hidden while it is empty."""
    return pn.pane.Alert(
        pn.bind(html.escape, text),
        alert_type=kind,
        visible=pn.bind(bool, text),
        css_classes=[css],
        sizing_mode="stretch_width",
    )


def _shown_style(shown: bool) -> dict[str, str]:
    """CSS that shows a component or hides it in place (its space kept)."""
    return {"visibility": "visible" if shown else "hidden"}


def _reproduce_html(commands: str) -> str:
    """The commands that rerun the timed runs from a shell (same nodes and launches)."""
    if not commands:
        return ""
    return (
        "<details><summary>Reproduce from the command line</summary>"
        f"<pre class='reproduce-command'>{html.escape(commands)}</pre></details>"
    )


class StatusLine(pn.viewable.Viewer):
    """Above the tabs: what the views show, the measured times (median and IQR, and whether
    A and B differ beyond noise), progress with a Cancel button while working, and any run
    error or note."""

    state = param.ClassSelector(class_=ExplorerState)

    def __init__(self, **params):
        super().__init__(**params)
        state = self.state
        self.summary = pn.pane.HTML(
            pn.bind(
                self._summary,
                state.param.origin,
                state.param.timings,
                state.param.error,
                state.param.timing,
            ),
            css_classes=["run-status"],
            sizing_mode="stretch_width",
            margin=(0, 10),
        )
        self.bar = pn.indicators.Progress(
            value=pn.bind(lambda p: p if p >= 0 else -1, state.param.progress),
            max=100,
            active=pn.bind(lambda p: p < 0, state.param.progress),
            width=220,
            css_classes=["run-progress"],
            margin=(8, 10),
        )
        self.progress_text = pn.pane.HTML(
            pn.bind(html.escape, state.param.progress_text),
            css_classes=["run-progress-text"],
            margin=(0, 10),
        )
        self.cancel_button = pn.widgets.Button(
            label="Cancel", color="warning", css_classes=["cancel-button"], width=90
        )
        self.cancel_button.on_click(lambda _event: state.cancel())
        # Hidden, not removed, while idle: the row keeps its height, so the tabs below do not
        # jump when a run starts or ends (a click aimed at a tab would land beside it).
        self.working = pn.Row(
            self.bar,
            self.progress_text,
            self.cancel_button,
            styles=pn.bind(_shown_style, state.param.busy),
            css_classes=["run-working"],
            sizing_mode="stretch_width",
        )
        self.notice = _message(state.param.notice, "info", "run-notice")
        self.close_button = pn.widgets.Button(
            label="Back to the model", css_classes=["close-file"], width=160
        )
        self.close_button.on_click(lambda _event: state.close_file())
        self.viewing = pn.Row(
            pn.pane.HTML(pn.bind(self._viewing_text, state.param.viewing), margin=(8, 10)),
            self.close_button,
            visible=pn.bind(bool, state.param.viewing),
            css_classes=["viewing-file"],
            sizing_mode="stretch_width",
        )
        self.alert = _message(state.param.run_error, "warning", "run-error")
        self.reproduce = pn.pane.HTML(
            # always visible (empty while there is no command): Panel 1.9 gives a pane first
            # drawn inside a callback CDN stylesheet URLs, which an offline machine cannot load
            pn.bind(_reproduce_html, state.param.reproduce),
            css_classes=["reproduce"],
            sizing_mode="stretch_width",
            margin=(0, 10),
        )

    def __panel__(self):
        return pn.Column(
            self.summary,
            self.reproduce,
            self.working,
            self.viewing,
            self.notice,
            self.alert,
            sizing_mode="stretch_width",
        )

    @staticmethod
    def _viewing_text(name: str) -> str:
        return (
            f"<b>Viewing {html.escape(name)}</b> (read-only): this trace does not say which "
            "program and settings made it, so the sidebar and the Program tab do not show them."
        )

    @staticmethod
    def _summary(origin: str, timings: dict, error: str, timing: RunTiming | None) -> str:
        if error:
            return "<i>Not compiled: fix the error in the Program tab.</i>"
        parts = [f"<b>{html.escape(origin)}</b>" if origin else "<i>not run yet</i>"]
        if "compile_ms" in timings:
            parts.append(f"compile {timings['compile_ms']:.0f} ms")
        if timing is not None and timing.spreads:
            policies = list(timing.spreads)
            spreads = timing.spreads.values()
            p = _digits([x for s in spreads for x in (s.median, s.q1, s.q3)])
            for policy in policies:
                s = timing.spreads[policy]
                spread = f"IQR {_ms(s.q1, p)}–{_ms(s.q3, p)}, n={s.n}" if s.n > 1 else "one run"
                parts.append(f"{html.escape(policy)} {_ms(s.median, p)} ms ({spread})")
            if len(policies) == 2:
                parts.append(f"<i>{html.escape(timing.verdict_text(*policies))}</i>")
            elif timing.busy:
                parts.append(f"<i>other processes used {timing.others_busy:.0%} of the CPUs</i>")
            for policy, how in timing.strategies.items():
                parts.append(f"{html.escape(policy)} ran {html.escape(how)}")
            if timing.note:
                parts.append(html.escape(timing.note))
        return " · ".join(parts)


def _ms(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, never in exponent form (Berxit's
    "1.51e+04 ms" reads "15,100 ms")."""
    rounded = float(f"{value:.{digits}g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 10 ** (digits - 1) else f"{rounded:g}"


def _digits(values: list[float]) -> int:
    """Significant digits (3 or more) that keep every two different ``values`` different
    when shown: the medians and IQR bounds on the status line must support its verdict (a
    spread 29.1-30.97 "apart" from 31.02-33.0 must not read as 29.1-31 against 31-33)."""
    distinct = sorted(set(values))
    for p in range(3, 8):
        shown = [float(f"{v:.{p}g}") for v in distinct]
        if all(a < b for a, b in zip(shown, shown[1:])):
            return p
    return 8


class TraceFiles(pn.viewable.Viewer):
    """Sidebar: download this session's traces as JSON Lines (or in the Chrome Trace Event
    Format, for ui.perfetto.dev and chrome://tracing), or open a saved one.

    The browser refuses a file over ``MAX_UPLOAD_MB`` before sending it (it says so in the
    drop area) and the file travels in chunks, so no upload can overflow the websocket and end
    the session; the server checks the size again and reads the file on the worker thread."""

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
        self.download_chrome = pn.widgets.FileDownload(
            callback=self._chrome_file,
            filename="acrobat-trace.json",
            color="default",
            label="Download for Perfetto (.json)",
            sizing_mode="stretch_width",
            css_classes=["trace-download-chrome"],
        )
        self.upload = BoundedFileDropper(
            max_bytes=UPLOAD_LIMIT,
            multiple=False,
            max_file_size=f"{MAX_UPLOAD_MB}MB",
            chunk_size=4_000_000,
            layout="compact",
            sizing_mode="stretch_width",
            css_classes=["trace-upload"],
        )
        self.upload.param.watch(self._open, "value")
        self.upload.param.watch(self._refused, "refused")
        self.refused = pn.pane.Alert(
            "", alert_type="warning", visible=False, css_classes=["upload-refused"]
        )
        self.state.param.watch(self._name, ["trace_a", "trace_b"])
        self._name()

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown("**Share a run**", margin=(5, 10, 0, 10)),
            self.download,
            self.download_chrome,
            pn.pane.Markdown(
                f"Open a saved trace (.jsonl, up to {MAX_UPLOAD_MB} MB):", margin=(0, 10)
            ),
            self.upload,
            self.refused,
            sizing_mode="stretch_width",
        )

    def _file(self) -> io.StringIO:
        return io.StringIO(self.state.trace_text())

    def _chrome_file(self) -> io.StringIO:
        """The session trace in the Chrome Trace Event Format (ui.perfetto.dev opens it)."""
        return io.StringIO(json.dumps(chrome_trace(self.state.session_trace())))

    def _name(self, *_events) -> None:
        state = self.state
        stem = f"acrobat-{state.model}-{state.policy_a}-{state.policy_b}"
        self.download.filename = f"{stem}.jsonl"
        self.download_chrome.filename = f"{stem}.perfetto.json"

    def _open(self, event: param.parameterized.Event) -> None:
        for name, content in dict(event.new or {}).items():
            self.open_bytes(name, content)

    def _refused(self, event: param.parameterized.Event) -> None:
        if event.new is not None:
            name, seen = event.new
            self._refuse(f"{html.escape(name)} is over {seen / 2**20:.1f} MB")

    def _refuse(self, what: str) -> None:
        self.refused.param.update(
            object=(
                f"{what}: the explorer opens traces up to {MAX_UPLOAD_MB} MB. "
                "Save a smaller run (fewer instances)."
            ),
            visible=True,
        )

    def open_bytes(self, name: str, content: bytes | str) -> bool:
        """Open one uploaded file, refusing it (with a message) when over the limit."""
        size = len(content)
        if size > UPLOAD_LIMIT:
            self._refuse(f"{html.escape(name)} is {size / 2**20:.1f} MB")
            return False
        self.refused.visible = False
        text = content if isinstance(content, str) else content.decode("utf-8", errors="replace")
        self.state.request_load(text, name or "uploaded trace")
        return True
