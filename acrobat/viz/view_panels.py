"""Panel viewers over the run traces: DFG, schedule, kernel timeline, compare, kernel source.

Each viewer rebuilds its pane from ``state.trace_a`` / ``state.trace_b`` (and
``state.comparison``) with the pure figure functions of ``acrobat.viz``; the attributes holding
the panes are public so tests can read the figures' data without a browser.
"""

from __future__ import annotations

import html

import panel as pn
import param
from bokeh.events import Tap

from acrobat.trace import HostSpan
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.colors import policy_color
from acrobat.viz.compare_view import SORT_KEYS, compare_figure, compare_table_html, sort_rows
from acrobat.viz.dfg_view import (
    FOLD_ABOVE,
    DfgLayout,
    dfg_figure,
    dfg_layout,
    dfg_legend_html,
    dfg_model,
    highlight_dfg,
    instances_in,
)
from acrobat.viz.gap_view import GAP_CSS, gap_html
from acrobat.viz.ir_view import TABLE_CSS
from acrobat.viz.lazy_view import LazyView
from acrobat.viz.schedule_view import (
    refresh_schedule_pair,
    schedule_model,
    schedule_pair,
    timeline_batch_at,
    timeline_pair,
)
from acrobat.viz.selection import (
    DETAILS_CSS,
    batch_details,
    batch_details_html,
    depth_text,
    node_details,
    node_details_html,
)
from acrobat.viz.source_view import CODE_CSS, code_html, host_program, kernel_sources

NOT_RUN = "<p><i>Not run yet (or the run failed): see the message above.</i></p>"
SWATCH_CSS = """
.dfg-legend { font-size: 12px; line-height: 1.9; }
.dfg-kernels { font-size: 12px; color: #57606a; }
.dfg-legend .swatch { display: inline-block; width: 12px; height: 12px; margin: 0 3px 0 8px;
  border: 1px solid #8c959f; border-radius: 2px; vertical-align: middle; }
.policy-swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px;
  border-radius: 2px; vertical-align: middle; }
.compare-verdict { font-size: 13px; margin: 4px 0; }
"""


def _side_trace(state: ExplorerState, side: str):
    return state.trace_a if side == "A" else state.trace_b


class DfgView(LazyView):
    """One instance's DFG (or every instance's), laid out by Graphviz and drawn by Bokeh (pan,
    zoom, hover, tap), coloured by depth or batch. A batch selected in the store
    (``state.selected_batch``, e.g. a click on a schedule bar) is outlined, and the details pane
    lists its kernel, size, depth, instances and source lines; a tapped node shows its own."""

    side = param.Selector(default="A", objects=["A", "B"], doc="which policy's run to draw")
    instance = param.Integer(default=0, bounds=(0, None))
    all_instances = param.Boolean(default=False, doc="draw every instance's nodes")
    color_by = param.Selector(default="depth", objects=["depth", "batch"])
    fold_above = param.Integer(default=FOLD_ABOVE, bounds=(1, None), doc="fold larger graphs")

    def __init__(self, **params):
        super().__init__(**params)
        self.instance_input = pn.widgets.IntInput.from_param(
            self.param.instance, label="Instance", width=110
        )
        self.legend = pn.pane.HTML("", stylesheets=[SWATCH_CSS], sizing_mode="stretch_width")
        self.plot = pn.pane.Bokeh(None, sizing_mode="stretch_width", css_classes=["dfg-plot"])
        self.placeholder = pn.pane.HTML(NOT_RUN)
        self.details = pn.pane.HTML(
            "",
            stylesheets=[DETAILS_CSS],
            sizing_mode="stretch_width",
            css_classes=["dfg-details"],
        )
        self.model = None
        self.highlighted: list[str] = []  # ids of the boxes outlined for the selected batch
        self._layouts: dict[tuple, DfgLayout] = {}
        self._followed = None  # the selection last followed (side and instance switched)
        self._following = False
        self.watch_state("trace_a", "trace_b")
        # the store may change on its worker thread: outline the batch on the page's thread
        self.state.param.watch(lambda *_: self.on_page(self._batch_selected), "selected_batch")
        self.param.watch(
            self._refresh, ["side", "instance", "all_instances", "color_by", "fold_above"]
        )
        self._refresh()

    @property
    def figure(self):
        """The Bokeh figure shown, or None."""
        return self.plot.object

    def __panel__(self):
        controls = pn.Row(
            pn.widgets.RadioButtonGroup.from_param(self.param.side, label="Run"),
            self.instance_input,
            pn.widgets.Checkbox.from_param(self.param.all_instances, label="All instances"),
            pn.widgets.RadioButtonGroup.from_param(self.param.color_by, label="Colour by"),
            pn.widgets.IntInput.from_param(self.param.fold_above, label="Fold above", width=110),
        )
        return pn.Column(
            controls,
            self.legend,
            self.placeholder,
            self.plot,
            self.details,
            sizing_mode="stretch_width",
            css_classes=["dfg-view"],
        )

    def _trace(self):
        return _side_trace(self.state, self.side)

    def _refresh(self, *_events) -> None:
        if self._following:  # _follow_selection is changing side/instance: draw once, after
            return
        self._follow_selection()
        trace = self._trace()
        instances = instances_in(trace) if trace is not None else []
        self.placeholder.visible = not instances
        if not instances:
            self.model, self.plot.object, self.legend.object = None, None, ""
            self.details.object, self.highlighted = "", []
            return
        self.instance_input.end = instances[-1]
        instance = None if self.all_instances else min(self.instance, instances[-1])
        key = (id(trace), instance, self.fold_above)
        # (no ``loading`` spinner: Panel 1.9 fails to set it on a Bokeh pane in a served app;
        # the bounded layout takes well under a second anyway)
        self.model = dfg_model(trace, instance, self.color_by, self.fold_above)
        if key not in self._layouts:  # one layout per graph: colours and selection reuse it
            self._layouts = {key: dfg_layout(self.model)}
        self.plot.object = dfg_figure(self.model, self._layouts[key])
        nodes = self.plot.object.select_one({"name": "nodes"}).data_source
        nodes.selected.on_change("indices", self._node_tapped)
        self.legend.object = dfg_legend_html(self.model) + _kernels_line(self.model)
        self._show_selection()

    def _batch_selected(self, *_events) -> None:
        """A batch was selected (or cleared) elsewhere: outline it, first switching to its
        run and, unless every instance is drawn, to one of its instances."""
        if not self.active:
            self._stale = True
        elif self._follow_selection():
            self._refresh()
        else:
            self._show_selection()

    def _follow_selection(self) -> bool:
        """Switch ``side`` / ``instance`` to show a newly selected batch (once per selection,
        so the user can still pick another instance). True when something switched."""
        selected = self.state.selected_batch
        if selected is None or selected == self._followed:
            self._followed = selected
            return False
        self._followed = selected
        side, batch = selected
        trace = _side_trace(self.state, side)
        details = batch_details(trace, batch) if trace is not None else None
        switch = {} if side == self.side else {"side": side}
        if (
            details is not None
            and details.instances
            and not self.all_instances
            and self.instance not in details.instances
        ):
            switch["instance"] = details.instances[0]
        if not switch:
            return False
        self._following = True
        try:
            self.param.update(**switch)
        finally:
            self._following = False
        return True

    def _show_selection(self) -> None:
        selected = self.state.selected_batch
        if self.model is None or self.plot.object is None:
            return
        batch = selected[1] if selected is not None and selected[0] == self.side else None
        self.highlighted = highlight_dfg(self.plot.object, self.model, batch)
        if batch is None:
            self.details.object = NOTHING_SELECTED
            return
        details = batch_details(self._trace(), batch, self.state.source)
        if details is None:
            self.details.object = NOTHING_SELECTED
            return
        shown = (
            f'<div class="dfg-highlight" data-batch="{batch}" '
            f'data-boxes="{len(self.highlighted)}">{len(self.highlighted)} box(es) of this '
            f"graph outlined in black hold the batch's nodes"
            + ("" if self.highlighted else " (none: pick an instance listed below)")
            + "</div>"
        )
        self.details.object = shown + batch_details_html(details, self.side)

    def _node_tapped(self, _attr, _old, new) -> None:
        if not new or self.model is None:
            return
        source = self.plot.object.select_one({"name": "nodes"}).data_source
        box = next(n for n in self.model.nodes if n.id == source.data["id"][new[0]])
        trace = self._trace()
        if box.count == 1:
            self.state.selected_node = (self.side, box.members[0])
            details = node_details(trace, box.members[0], self.state.source)
            self.details.object = node_details_html(details, self.side) if details else ""
        else:
            self.details.object = _box_html(box)


NOTHING_SELECTED = (
    "<p><i>Click a bar in the Schedule tab to outline its batch here; click a box for its "
    "details.</i></p>"
)


def _kernels_line(model) -> str:
    counts: dict[str, int] = {}
    for node in model.nodes:
        counts[node.kernel] = counts.get(node.kernel, 0) + node.count
    shown = "instance " + str(model.instance) if model.instance is not None else "all instances"
    kernels = ", ".join(f"{html.escape(name)} ×{n}" for name, n in sorted(counts.items()))
    return (
        f'<div class="dfg-kernels">{shown}: {model.total_nodes} node(s) of {kernels}; '
        "scroll to zoom, drag to pan, hover a box for its batch</div>"
    )


def _box_html(box) -> str:
    rows = [
        ("kernel", box.kernel),
        ("nodes", f"{box.count}"),
        ("instances", ", ".join(map(str, box.instances))),
        ("depths", ", ".join(map(depth_text, box.depths))),
        ("batches", ", ".join(map(str, box.batches))),
    ]
    body = "".join(f"<tr><th>{k}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f'<div class="selection-details"><b>folded box</b><table>{body}</table></div>'


class ScheduleView(LazyView):
    """Policy A's and policy B's batches side by side on one x range (``shared_x``) or each
    on its own, with the lower bound and the run passes' starts marked; clicking a bar selects
    that batch (``state.selected_batch``), which the DFG view outlines. ``log_y`` draws the
    batch sizes on a log axis."""

    log_y = param.Boolean(default=False, doc="batch sizes on a log axis")
    shared_x = param.Boolean(default=True, doc="one x range for policy A and B")

    def __init__(self, **params):
        super().__init__(**params)
        self.summary = pn.pane.HTML("", css_classes=["schedule-summary"])
        self.plot = pn.pane.Bokeh(None, sizing_mode="stretch_width", css_classes=["schedule"])
        self.placeholder = pn.pane.HTML(NOT_RUN)
        self.details = pn.pane.HTML(
            "",
            stylesheets=[DETAILS_CSS],
            sizing_mode="stretch_width",
            css_classes=["batch-details"],
        )
        self.gap_button = pn.widgets.Button(
            label="Why above the lower bound?", css_classes=["gap-button"], width=220
        )
        self.gap_button.on_click(lambda _event: self.state.submit(self.state.explain_gap))
        self.gap = pn.pane.HTML(
            "", stylesheets=[GAP_CSS], sizing_mode="stretch_width", css_classes=["gap-report"]
        )
        self.watch_state("trace_a", "trace_b")
        self.state.param.watch(lambda *_: self.on_page(self._show_selection), "selected_batch")
        self.state.param.watch(lambda *_: self.on_page(self._show_gap), ["gap", "viewing"])
        self.param.watch(self._refresh, ["log_y", "shared_x"])
        self._refresh()

    @property
    def figure(self):
        """The Bokeh layout shown (a row of one figure per policy), or None."""
        return self.plot.object

    def __panel__(self):
        toggle = pn.widgets.Checkbox.from_param(self.param.log_y, label="Log-scale batch sizes")
        shared = pn.widgets.Checkbox.from_param(
            self.param.shared_x, label="Same x range for A and B", css_classes=["shared-x"]
        )
        return pn.Column(
            pn.Row(self.summary, toggle, shared),
            self.placeholder,
            self.plot,
            self.details,
            self.gap_button,
            self.gap,
            sizing_mode="stretch_width",
        )

    def _show_gap(self, *_events) -> None:
        """The gap report of the workload shown, once asked for (a file shown read-only has
        no program to run: the button is off)."""
        report = self.state.gap
        self.gap_button.disabled = bool(self.state.viewing)
        self.gap.object = gap_html(report) if report is not None else ""

    def _refresh(self, *_events) -> None:
        traces = [t for t in (self.state.trace_a, self.state.trace_b) if t is not None]
        self.placeholder.visible = not traces
        if not traces:
            self.plot.object, self.summary.object, self.details.object = None, "", ""
            return
        shape = {"log_y": self.log_y, "shared_x": self.shared_x}
        if not refresh_schedule_pair(self.plot.object, *traces, **shape):
            self.plot.object = schedule_pair(*traces, **shape)
            for side, fig in zip("AB", self.plot.object.children):
                source = fig.select_one({"name": "batches"}).data_source
                source.selected.on_change("indices", self._bar_tapped(side))
        lines = []
        for side, trace in zip("AB", traces):
            model = schedule_model(trace)
            swatch = f'<span style="color:{policy_color(model.policy)}">■</span>'
            lines.append(
                f"{swatch} <b>{side} · {html.escape(model.policy)}</b>: {model.batches} batches "
                f"(lower bound {model.lower_bound}, {model.run_passes} run pass(es))"
            )
        self.summary.object = " &nbsp;|&nbsp; ".join(lines)
        self._show_selection()
        self._show_gap()

    def _bar_tapped(self, side: str):
        def tapped(_attr, _old, new) -> None:
            if new:
                self.state.selected_batch = (side, int(new[0]))
            elif self.state.selected_batch is not None and self.state.selected_batch[0] == side:
                self.state.selected_batch = None

        return tapped

    def _show_selection(self, *_events) -> None:
        selected = self.state.selected_batch
        layout = self.plot.object
        if layout is None:
            return
        for side, fig in zip("AB", layout.children):  # one bar selected across both plots
            source = fig.select_one({"name": "batches"}).data_source
            want = [selected[1]] if selected is not None and selected[0] == side else []
            if list(source.selected.indices) != want:
                source.selected.indices = want
        trace = _side_trace(self.state, selected[0]) if selected is not None else None
        details = batch_details(trace, selected[1], self.state.source) if trace else None
        if details is None:
            self.details.object = (
                "<p><i>Click a bar to see its batch; the DFG tab outlines its nodes.</i></p>"
            )
            return
        self.details.object = batch_details_html(details, selected[0])


class TimelineView(LazyView):
    """Profiler view of the runs: nested slices (run, host phases, batches, gather / kernel /
    scatter) on stacked lanes, policy A above policy B on one time axis, with box zoom, wheel
    zoom, pan, hover and a box-select measurement of a span (the Div under the plots).
    Clicking a batch selects it (``state.selected_batch``), as a schedule bar click does."""

    def __init__(self, **params):
        super().__init__(**params)
        self.plot = pn.pane.Bokeh(None, sizing_mode="stretch_width", css_classes=["timeline"])
        self.placeholder = pn.pane.HTML(NOT_RUN)
        self.caption = pn.pane.HTML("", css_classes=["timeline-runs"], margin=(0, 10))
        self.watch_state("trace_a", "trace_b", "timing")
        self._refresh()

    @property
    def figure(self):
        """The Bokeh layout shown (a column: one timeline figure per policy, then the
        measurement Div), or None."""
        return self.plot.object

    def __panel__(self):
        return pn.Column(self.placeholder, self.caption, self.plot, sizing_mode="stretch_width")

    def _refresh(self, *_events) -> None:
        state, traces, lines = self.state, [], []
        for side, trace, policy in (
            ("A", state.trace_a, state.policy_a),
            ("B", state.trace_b, state.policy_b),
        ):
            if trace is None:
                continue
            timed = state.timing.timed_run(policy) if state.timing is not None else None
            traces.append(timed.trace if timed is not None else trace)
            lines.append(_timeline_caption(side, policy, timed, state.timing))
        self.placeholder.visible = not traces
        self.caption.object = "<br>".join(lines)
        self.plot.object = timeline_pair(*traces) if traces else None
        if self.plot.object is not None:
            for side, fig in zip("AB", self.plot.object.children[:-1]):
                fig.on_event(Tap, self._tapped(side, fig))

    def _tapped(self, side: str, fig):
        """A click on a batch (or one of its steps) selects it, as a schedule bar click
        does: the DFG outlines its nodes and the Schedule tab lists it."""

        def tapped(event) -> None:
            batch = timeline_batch_at(fig, event.x, event.y)
            if batch is not None:
                self.state.selected_batch = (side, batch)

        return tapped


def _timeline_caption(side: str, policy: str, timed, timing) -> str:
    """Which run a timeline draws: one of the timed runs (the one nearest the median), or,
    until they are timed, the traced run the other views draw."""
    who = f"<b>{side} · {html.escape(policy)}</b>"
    s = timing.spread(policy) if timing is not None else None
    if timed is None:
        measured = ""
        if s is not None:  # a saved session: its timed runs' times, not the runs
            measured = f"; timed: median {s.median:.3g} ms (IQR {s.q1:.3g}–{s.q3:.3g} ms, n={s.n})"
        return (
            f"{who}: the traced run (node records on); its times are not the timed ones{measured}"
        )
    # the drawn span is the run's own total (its trace's); the timed wall time adds the call
    # around it (acrobat.run's lookup and return), a fraction of a millisecond
    drawn = max((e.end_ms for e in timed.trace.events if isinstance(e, HostSpan)), default=0.0)
    return (
        f"{who}: run {timed.index} of {timed.count} ({timed.wall_ms:.3g} ms timed, "
        f"{drawn:.3g} ms drawn), the timed run nearest the median {s.median:.3g} ms "
        f"(IQR {s.q1:.3g}–{s.q3:.3g} ms)"
    )


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
        # an empty pane draws nothing; toggling ``visible`` on a Bokeh pane whose figure is
        # already in the page makes Panel 1.9 copy the figure's stylesheet objects into the
        # pane's string-only list, and the TypeError aborted the tab switch that caused it
        self.plot.object = compare_figure(rows, self.log_scale) if rows else None


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
        self.caption = pn.pane.HTML("")
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
        self.caption.object = (
            f"compiled by the <b>{html.escape(source.backend)}</b> backend "
            f"({html.escape(source.language)})"
        )
        self.code.object = code_html(source.source, source.language)
