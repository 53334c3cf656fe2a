"""Panel viewers over the run traces: DFG, schedule, kernel timeline, compare, kernel source.

Each viewer rebuilds its pane from ``state.trace_a`` / ``state.trace_b`` (and
``state.comparison``) with the pure figure functions of ``acrobat.viz``; the attributes holding
the panes are public so tests can read the figures' data without a browser.
"""

from __future__ import annotations

import panel as pn
import param

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compare_view import SORT_KEYS, compare_figure, compare_table_html, sort_rows
from acrobat.viz.dfg_view import FOLD_ABOVE, dfg_legend_html, dfg_model, dfg_svg, instances_in
from acrobat.viz.ir_view import TABLE_CSS
from acrobat.viz.lazy_view import LazyView
from acrobat.viz.schedule_view import (
    refresh_schedule_pair,
    schedule_model,
    schedule_pair,
    timeline_pair,
)
from acrobat.viz.source_view import CODE_CSS, code_html, host_program, kernel_sources

NOT_RUN = "<p><i>Not run yet (or the run failed): see the message above.</i></p>"
SWATCH_CSS = """
.dfg-legend { font-size: 12px; line-height: 1.9; }
.dfg-svg svg { max-width: 100%; height: auto; }
.dfg-legend .swatch { display: inline-block; width: 12px; height: 12px; margin: 0 3px 0 8px;
  border: 1px solid #8c959f; border-radius: 2px; vertical-align: middle; }
.policy-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px;
  border-radius: 2px; vertical-align: middle; }
.compare-verdict { font-size: 13px; margin: 4px 0; }
"""


def _side_trace(state: ExplorerState, side: str):
    return state.trace_a if side == "A" else state.trace_b


class DfgView(LazyView):
    """One instance's DFG as an SVG drawn by Graphviz on the server, coloured by depth or batch."""

    side = param.Selector(default="A", objects=["A", "B"], doc="which policy's run to draw")
    instance = param.Integer(default=0, bounds=(0, None))
    color_by = param.Selector(default="depth", objects=["depth", "batch"])
    fold_above = param.Integer(default=FOLD_ABOVE, bounds=(1, None), doc="fold larger graphs")

    def __init__(self, **params):
        super().__init__(**params)
        self.instance_input = pn.widgets.IntInput.from_param(
            self.param.instance, label="Instance", width=110
        )
        self.legend = pn.pane.HTML("", stylesheets=[SWATCH_CSS], sizing_mode="stretch_width")
        self.svg = pn.pane.HTML(
            "",
            stylesheets=[SWATCH_CSS],
            sizing_mode="stretch_width",
            max_height=760,
            styles={"overflow": "auto"},
            css_classes=["dfg-view"],
        )
        self.model = None
        self.watch_state("trace_a", "trace_b")
        self.param.watch(self._refresh, ["side", "instance", "color_by", "fold_above"])
        self._refresh()

    def __panel__(self):
        controls = pn.Row(
            pn.widgets.RadioButtonGroup.from_param(self.param.side, label="Run"),
            self.instance_input,
            pn.widgets.RadioButtonGroup.from_param(self.param.color_by, label="Colour by"),
            pn.widgets.IntInput.from_param(self.param.fold_above, label="Fold above", width=110),
        )
        return pn.Column(controls, self.legend, self.svg, sizing_mode="stretch_width")

    def _refresh(self, *_events) -> None:
        trace = _side_trace(self.state, self.side)
        instances = instances_in(trace) if trace is not None else []
        if not instances:
            self.model, self.svg.object, self.legend.object = None, NOT_RUN, ""
            return
        self.instance_input.end = instances[-1]
        instance = min(self.instance, instances[-1])
        with self.svg.param.update(loading=True):  # Graphviz can take a moment
            self.model = dfg_model(trace, instance, self.color_by, self.fold_above)
            self.legend.object = dfg_legend_html(self.model)
            self.svg.object = f'<div class="dfg-svg">{dfg_svg(self.model)}</div>'


class ScheduleView(LazyView):
    """Policy A's and policy B's batches side by side, with the lower bound marked."""

    def __init__(self, **params):
        super().__init__(**params)
        self.summary = pn.pane.HTML("", css_classes=["schedule-summary"])
        self.plot = pn.pane.Bokeh(None, sizing_mode="stretch_width", css_classes=["schedule"])
        self.placeholder = pn.pane.HTML(NOT_RUN)
        self.watch_state("trace_a", "trace_b")
        self._refresh()

    @property
    def figure(self):
        """The Bokeh layout shown (a row of one figure per policy), or None."""
        return self.plot.object

    def __panel__(self):
        return pn.Column(self.summary, self.placeholder, self.plot, sizing_mode="stretch_width")

    def _refresh(self, *_events) -> None:
        traces = [t for t in (self.state.trace_a, self.state.trace_b) if t is not None]
        self.placeholder.visible = not traces
        if not traces:
            self.plot.object, self.summary.object = None, ""
            return
        if not refresh_schedule_pair(self.plot.object, *traces):
            self.plot.object = schedule_pair(*traces)
        lines = []
        for side, trace in zip("AB", traces):
            model = schedule_model(trace)
            lines.append(
                f"<b>{side} · {model.policy}</b>: {model.batches} batches "
                f"(lower bound {model.lower_bound}, {model.run_passes} run pass(es))"
            )
        self.summary.object = " &nbsp;|&nbsp; ".join(lines)


class TimelineView(LazyView):
    """Profiler view of the runs: nested slices (run, host phases, batches, gather / kernel /
    scatter) on stacked lanes, policy A above policy B on one time axis, with box zoom, wheel
    zoom, pan, hover and a box-select measurement of a span (the Div under the plots)."""

    def __init__(self, **params):
        super().__init__(**params)
        self.plot = pn.pane.Bokeh(None, sizing_mode="stretch_width", css_classes=["timeline"])
        self.placeholder = pn.pane.HTML(NOT_RUN)
        self.watch_state("trace_a", "trace_b")
        self._refresh()

    @property
    def figure(self):
        """The Bokeh layout shown (a column: one timeline figure per policy, then the
        measurement Div), or None."""
        return self.plot.object

    def __panel__(self):
        return pn.Column(self.placeholder, self.plot, sizing_mode="stretch_width")

    def _refresh(self, *_events) -> None:
        traces = [t for t in (self.state.trace_a, self.state.trace_b) if t is not None]
        self.placeholder.visible = not traces
        self.plot.object = timeline_pair(*traces) if traces else None


class CompareView(LazyView):
    """Latency (median and IQR of interleaved runs), launches, mean batch size and host
    overhead of every configuration timed on this workload; sortable, clearable, log scale."""

    sort_by = param.Selector(default="order run", objects=list(SORT_KEYS), doc="row order")
    descending = param.Boolean(default=False, doc="sort from the largest")
    log_scale = param.Boolean(default=False, doc="metric axes on a log scale")

    def __init__(self, **params):
        super().__init__(**params)
        state = self.state
        self.policies_button = pn.widgets.Button(
            label="Compare all policies",
            color="primary",
            css_classes=["compare-policies"],
        )
        self.options_button = pn.widgets.Button(
            label="Ablate optimizations (policy A)", css_classes=["compare-options"]
        )
        self.clear_button = pn.widgets.Button(label="Clear rows", css_classes=["compare-clear"])
        self.policies_button.on_click(lambda _event: state.submit(state.compare_policies))
        self.options_button.on_click(lambda _event: state.submit(state.compare_options))
        self.clear_button.on_click(lambda _event: state.clear_comparison())
        for button in (self.policies_button, self.options_button):
            button.disabled = bool(state.viewing)
        state.param.watch(self._viewing, "viewing")
        self.table = pn.pane.HTML(
            "", stylesheets=[TABLE_CSS, SWATCH_CSS], css_classes=["compare-table"]
        )
        self.plot = pn.pane.Bokeh(None, sizing_mode="stretch_width", css_classes=["compare"])
        self.watch_state("comparison")
        self.param.watch(self._refresh, ["sort_by", "descending", "log_scale"])
        self._refresh()

    @property
    def figure(self):
        """The Bokeh grid of the four metric charts, or None before any run."""
        return self.plot.object

    def _viewing(self, event: param.parameterized.Event) -> None:
        self.policies_button.disabled = self.options_button.disabled = bool(event.new)

    def __panel__(self):
        buttons = pn.Row(self.policies_button, self.options_button, self.clear_button)
        order = pn.Row(
            pn.widgets.Select.from_param(self.param.sort_by, label="Sort by", width=140),
            pn.widgets.Checkbox.from_param(self.param.descending, label="largest first"),
            pn.widgets.Checkbox.from_param(self.param.log_scale, label="log scale"),
            css_classes=["compare-order"],
        )
        return pn.Column(buttons, order, self.table, self.plot, sizing_mode="stretch_width")

    @property
    def rows(self):
        """The rows as shown: ``state.comparison`` in the chosen order."""
        return sort_rows(self.state.comparison, self.sort_by, self.descending)

    def _refresh(self, *_events) -> None:
        rows = self.rows
        self.table.object = compare_table_html(rows)
        self.plot.object = compare_figure(rows, self.log_scale) if rows else None
        self.plot.visible = bool(rows)


class KernelSourceView(LazyView):
    """The generated code of one kernel (NumPy or CUDA) and the generated host program."""

    def __init__(self, **params):
        super().__init__(**params)
        self.kernel = pn.widgets.Select(label="Kernel", width=320, css_classes=["kernel-pick"])
        self.code = pn.pane.HTML(
            "", stylesheets=[CODE_CSS], sizing_mode="stretch_width", css_classes=["kernel-source"]
        )
        self.host = pn.pane.HTML(
            "", stylesheets=[CODE_CSS], sizing_mode="stretch_width", css_classes=["host-program"]
        )
        self.caption = pn.pane.Markdown("")
        self._sources = {}
        self.watch_state("trace_a", "trace_b")
        self.kernel.param.watch(self._show, "value")
        self._refresh()

    def __panel__(self):
        kernel = pn.Column(self.kernel, self.caption, self.code, sizing_mode="stretch_width")
        host = pn.Column(
            pn.pane.Markdown("**Host program**"), self.host, sizing_mode="stretch_width"
        )
        return pn.Row(kernel, host, sizing_mode="stretch_width")

    def _refresh(self, *_events) -> None:
        trace = self.state.trace_a if self.state.trace_a is not None else self.state.trace_b
        self._sources = kernel_sources(trace) if trace is not None else {}
        names = list(self._sources)
        keep = self.kernel.value if self.kernel.value in names else (names[0] if names else None)
        self.kernel.param.update(options=names, value=keep)
        self.host.object = code_html(host_program(trace)) if trace is not None else NOT_RUN
        self._show()

    def _show(self, *_events) -> None:
        source = self._sources.get(self.kernel.value)
        if source is None:
            self.code.object, self.caption.object = NOT_RUN, ""
            return
        self.caption.object = f"compiled by the **{source.backend}** backend ({source.language})"
        self.code.object = code_html(source.source, source.language)
