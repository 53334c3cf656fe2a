"""Schedule and kernel-timeline view models and their Bokeh figures.

Schedule: the batches of a run in launch order (``BatchFormed``), one bar per batch whose height
is the batch size and whose colour is the kernel; a vertical span marks the lower bound (the
fewest batches any schedule could use, summed over run passes from ``ScheduleFormed``). Two
policies are drawn side by side with shared kernel colours and one shared x range (or each its
own); dotted lines mark where a run pass starts; each figure's title and frame take its policy's
colour, legends sit outside the bars, sizes can be drawn on a log axis, and a click on a bar
selects that batch (the explorer links it to the DFG view).

Timeline: a profiler view of one run's nested slices (``acrobat.trace.run_slices``) on stacked
lanes: the run, its host phases (``HostSpan``), its batches (``KernelLaunched``) and their gather /
kernel / scatter steps; box zoom, wheel zoom and pan along time, hover (name, start, duration,
kernel, batch size, bytes gathered), and box select to measure a span and the kernel time in it.
Two runs are drawn one above the other on a shared time axis.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from bokeh.events import SelectionGeometry
from bokeh.layouts import column, row
from bokeh.models import (
    BoxSelectTool,
    BoxZoomTool,
    ColumnDataSource,
    CustomJS,
    Div,
    HoverTool,
    Label,
    Legend,
    PanTool,
    Range1d,
    ResetTool,
    SaveTool,
    Span,
    TapTool,
    WheelZoomTool,
)
from bokeh.palettes import Category10, Category20
from bokeh.plotting import figure

from acrobat.trace import BatchFormed, KernelLaunched, ScheduleFormed, Trace, run_slices
from acrobat.viz.colors import policy_color

HOST_COLOR = "#8c959f"
RUN_COLOR = "#57606a"
LANE_NAMES = ("run", "host phases", "batches", "gather · kernel · scatter", "device")
LANE_RANK = {"run": 0, "host": 1, "batch": 2, "gather": 3, "kernel": 3, "scatter": 3, "device": 4}
STEP_ALPHA = {"gather": 0.45, "scatter": 0.45, "batch": 0.8}


@dataclass(frozen=True)
class ScheduleModel:
    """One run's schedule: a column dict with one row per batch, and its bounds."""

    policy: str
    data: dict[str, list]
    lower_bound: int
    batches: int
    nodes: int
    run_passes: int
    pass_starts: tuple[int, ...] = ()  # x where a run pass starts (after the first)


@dataclass(frozen=True)
class TimelineModel:
    """One run's timeline: lanes top to bottom and a column dict with one row per slice."""

    policy: str
    lanes: tuple[str, ...]
    data: dict[str, list]
    total_ms: float


def _policy(trace: Trace) -> str:
    formed = trace.of(ScheduleFormed) or trace.of(BatchFormed)
    return formed[0].policy if formed else "?"


def schedule_model(trace: Trace) -> ScheduleModel:
    """The batches of ``trace`` in launch order (across run passes) and the lower bound."""
    formed = trace.of(BatchFormed)
    schedules = trace.of(ScheduleFormed)
    data = {
        "position": [n + 1 for n in range(len(formed))],
        "batch": list(range(len(formed))),  # run-wide number, as NodeRecorded.batch
        "x": [n + 0.5 for n in range(len(formed))],
        "kernel": [batch.kernel for batch in formed],
        "size": [batch.size for batch in formed],
        "level": [batch.level for batch in formed],
        "run_pass": [batch.run_pass for batch in formed],
        "index": [batch.index for batch in formed],
    }
    return ScheduleModel(
        policy=_policy(trace),
        data=data,
        lower_bound=sum(schedule.lower_bound for schedule in schedules),
        batches=len(formed),
        nodes=sum(schedule.nodes for schedule in schedules),
        run_passes=len(schedules),
        pass_starts=tuple(
            n for n in range(1, len(formed)) if formed[n].run_pass != formed[n - 1].run_pass
        ),
    )


def kernel_colors(*traces: Trace) -> dict[str, str]:
    """One colour per kernel name, stable across the given traces (sorted names)."""
    names = sorted({event.kernel for trace in traces for event in trace.of(BatchFormed)})
    names += sorted({e.kernel for t in traces for e in t.of(KernelLaunched)} - set(names))
    cycle = Category10[10] if len(names) <= 10 else Category20[20]
    return {name: cycle[n % len(cycle)] for n, name in enumerate(names)}


def schedule_figure(
    model: ScheduleModel,
    colors: dict[str, str],
    name: str = "schedule",
    x_range: Range1d | None = None,
    log_y: bool = False,
):
    """Bars of batch size in launch order, coloured by kernel, with the lower bound marked.

    The title and frame take the policy's colour (:func:`acrobat.viz.colors.policy_color`);
    the legend sits right of the plot, never over bars; ``x_range`` is shared by the figures
    of a pair; ``log_y`` draws batch sizes on a log axis (eager's 1s beside batches of 100s).
    A click on a bar selects it (``TapTool``: the bars' source's ``selected.indices``)."""
    fig = figure(
        name=name,
        height=360,
        sizing_mode="stretch_width",
        x_axis_label="batch (launch order)",
        y_axis_label="batch size (nodes)" + (", log scale" if log_y else ""),
        x_range=x_range if x_range is not None else Range1d(0, 1),
        y_range=Range1d(LOG_FLOOR if log_y else 0, 1),
        y_axis_type="log" if log_y else "linear",
        tools="xpan,xwheel_zoom,tap,reset,save",
        active_scroll="xwheel_zoom",  # the wheel zooms without picking the tool first
        toolbar_location="above",
    )
    fig.add_layout(Legend(location="top_left", label_text_font_size="10px"), "right")
    source = ColumnDataSource({key: [] for key in [*model.data, "color", "bottom"]})
    bars = fig.vbar(
        x="x",
        top="size",
        bottom="bottom",
        width=0.85,
        color="color",
        source=source,
        name="batches",
        legend_field="kernel",
        selection_line_color="black",
        selection_line_width=2,
        nonselection_fill_alpha=0.35,
        nonselection_line_alpha=0.35,
    )
    tips = [
        ("batch", "@batch (launch @position)"),
        ("kernel", "@kernel"),
        ("size", "@size"),
        ("level", "@level"),
        ("run pass", "@run_pass"),
    ]
    fig.add_tools(HoverTool(renderers=[bars], tooltips=tips))
    fig.select_one(TapTool).renderers = [bars]
    fig.add_layout(
        Span(
            dimension="height",
            line_color="#cf222e",
            line_dash="dashed",
            line_width=2,
            name="lower_bound",
        )
    )
    fig.add_layout(
        Label(
            x=0,
            y=8,
            y_units="screen",
            x_offset=-4,
            text_align="right",
            text_color="#cf222e",
            text_font_size="11px",
            # drawn over the bars, on a white box, so a tall bar cannot hide it
            level="overlay",
            background_fill_color="white",
            background_fill_alpha=0.9,
            name="lower_bound_label",
        )
    )
    # a run pass ends where tensor values were read back (StackRNN: ~100 per run): a dotted
    # line between its last batch and the next pass's first
    fig.vspan(
        x="x",
        source=ColumnDataSource({"x": []}),
        line_color="#6e7781",
        line_dash="dotted",
        line_width=1,
        name="pass_starts",
        level="underlay",
    )
    fig.outline_line_width = 3
    fill_schedule_figure(fig, model, colors)
    return fig


LOG_FLOOR = 0.7  # where a log axis starts: a batch of 1 still shows as a bar


def fill_schedule_figure(fig, model: ScheduleModel, colors: dict[str, str]) -> None:
    """Show ``model`` in a figure made by ``schedule_figure``, in place: in a served app only
    the new data travels to the browser, not a new figure. The selection is cleared."""
    log_y = fig.y_scale.__class__.__name__ == "LogScale"
    source = fig.select_one({"name": "batches"}).data_source
    source.selected.indices = []
    source.data = dict(
        model.data,
        color=[colors[k] for k in model.data["kernel"]],
        bottom=[LOG_FLOOR if log_y else 0] * model.batches,
    )
    fig.title.text = f"{model.policy}: {model.batches} batches for {model.nodes} nodes"
    fig.title.text_color = fig.outline_line_color = policy_color(model.policy)
    fig.x_range.end = max(fig.x_range.end, max(model.batches, model.lower_bound, 1) * 1.04)
    fig.y_range.end = max(model.data["size"], default=1) * (1.5 if log_y else 1.08)
    fig.select_one({"name": "pass_starts"}).data_source.data = {"x": list(model.pass_starts)}
    fig.select_one({"name": "lower_bound"}).location = model.lower_bound
    label = fig.select_one({"name": "lower_bound_label"})
    label.x, label.text = model.lower_bound, f"lower bound {model.lower_bound}"


def _end(models: list[ScheduleModel]) -> float:
    return max([max(m.batches, m.lower_bound, 1) for m in models]) * 1.04


def schedule_pair(
    trace_a: Trace, trace_b: Trace | None = None, log_y: bool = False, shared_x: bool = True
):
    """Policy A's schedule beside policy B's (one figure when B is absent), with shared kernel
    colours and, with ``shared_x``, one shared x range (batch index), so equal positions line
    up; without it each spans its own batches (acrobat's 375 are not squeezed beside eager's
    thousands). Each has its own y axis: eager's batches of 1 would vanish beside batches of
    1000 (or use ``log_y``)."""
    traces = [trace_a] if trace_b is None else [trace_a, trace_b]
    colors = kernel_colors(*traces)
    models = [schedule_model(trace) for trace in traces]
    shared = Range1d(0, _end(models))
    figures = [
        schedule_figure(
            model, colors, f"schedule-{side}", shared if shared_x else Range1d(0, 1), log_y
        )
        for model, side in zip(models, "ab")
    ]
    return row(*figures, sizing_mode="stretch_width", name="schedule-pair")


def shares_x(layout) -> bool:
    """Whether the figures of a ``schedule_pair`` layout share one x range."""
    ranges = {id(fig.x_range) for fig in layout.children}
    return len(ranges) == 1


def refresh_schedule_pair(
    layout,
    trace_a: Trace,
    trace_b: Trace | None = None,
    log_y: bool = False,
    shared_x: bool = True,
) -> bool:
    """Show new runs in a layout made by ``schedule_pair``, in place. False (and nothing
    changed) when the layout has a different number of figures, y scale or x range sharing:
    build a new one."""
    traces = [trace_a] if trace_b is None else [trace_a, trace_b]
    if layout is None or len(layout.children) != len(traces):
        return False
    if any((fig.y_scale.__class__.__name__ == "LogScale") != log_y for fig in layout.children):
        return False
    if len(traces) > 1 and shares_x(layout) != shared_x:
        return False
    colors = kernel_colors(*traces)
    models = [schedule_model(trace) for trace in traces]
    for fig, model in zip(layout.children, models):
        fig.x_range.end = _end(models if shared_x else [model])
    for fig, model in zip(layout.children, models):
        fill_schedule_figure(fig, model, colors)
    return True


def timeline_model(trace: Trace) -> TimelineModel:
    """The run of ``trace`` as nested slices on stacked lanes (``acrobat.trace.run_slices``):
    the run on top, its host phases below it, the batches inside the execution phases below
    those, each batch's gather / kernel / scatter steps below its batch, and device time last.
    Host phases inside host phases (a fiber program flushes inside graph construction) get a
    lane below the phases around them."""
    slices = run_slices(trace)
    # a lane per kind of slice; host phases nested in host phases get lanes of their own
    keys = [(LANE_RANK[s.cat], s.depth if s.cat == "host" else 0) for s in slices]
    lanes, lane_of = [], {}
    for rank, depth in sorted(set(keys)):
        label = LANE_NAMES[rank]
        if rank == LANE_RANK["host"] and depth > 1:
            label = f"{label} (nested {depth - 1})"
        lanes.append(label)
        lane_of[(rank, depth)] = label
    has_steps = {s.args["batch"] for s in slices if s.cat == "kernel"}
    rows = []
    for s, key in zip(slices, keys):
        size = s.args.get("batch size")
        moved = s.args.get("bytes gathered")
        launch = s.args.get("batch")  # counted from 1; the schedule's batch numbers from 0
        # kernel time: the kernel steps, or a batch recorded without steps (older traces)
        counted = s.cat == "kernel" or (s.cat == "batch" and s.args["batch"] not in has_steps)
        rows.append(
            (
                s.cat,
                lane_of[key],
                s.name,
                s.args.get("kernel", ""),
                size,
                s.start_ms,
                s.end_ms,
                moved,
                "—" if size is None else str(size),
                "—" if moved is None else f"{moved:,}",
                "—" if launch is None else f"{launch - 1} (launch {launch})",
                -1 if launch is None else launch - 1,
                1 if counted else 0,
                STEP_ALPHA.get(s.cat, 1.0),
            )
        )
    keys = (
        "kind",
        "lane",
        "name",
        "kernel",
        "size",
        "start_ms",
        "end_ms",
        "bytes_gathered",
        "size_text",
        "bytes_text",
        "batch_text",
        "batch",
        "kernel_time",
        "alpha",
    )
    data = {key: [r[n] for r in rows] for n, key in enumerate(keys)}
    data["duration_ms"] = [end - start for start, end in zip(data["start_ms"], data["end_ms"])]
    total = max(data["end_ms"], default=0.0)
    return TimelineModel(_policy(trace), tuple(lanes), data, total)


def measure_span(model: TimelineModel, start_ms: float, end_ms: float) -> tuple[float, float, int]:
    """What the timeline reports for a selected time span: its length, the kernel time inside
    it (each kernel step's overlap with the span; a batch without steps counts whole) and the
    batches that start in it. The figure's selection callback computes the same in the
    browser."""
    a, b = min(start_ms, end_ms), max(start_ms, end_ms)
    d = model.data
    kernel = sum(
        max(0.0, min(e, b) - max(s, a))
        for s, e, k in zip(d["start_ms"], d["end_ms"], d["kernel_time"])
        if k
    )
    batches = sum(1 for s, c in zip(d["start_ms"], d["kind"]) if c == "batch" and a <= s <= b)
    return b - a, kernel, batches


MEASURE_TOOL = "Measure a span (box select)"
MEASURE_HINT = (
    "<b>Measure</b>: pick the box-select tool (Measure a span) and drag along the time axis of "
    "either run: "
    "the span's length and the kernel time inside it show here for both runs."
)

# the browser's twin of measure_span, for every run at once (one Div line per run)
_MEASURE_JS = """
const g = cb_obj.geometry;
if (g.x0 == null || g.x1 == null) { return; }
const a = Math.min(g.x0, g.x1), b = Math.max(g.x0, g.x1);
const lines = [];
for (let r = 0; r < sources.length; r++) {
  const d = sources[r].data;
  let kernel = 0, batches = 0;
  for (let i = 0; i < d.start_ms.length; i++) {
    const s = d.start_ms[i], e = d.end_ms[i];
    if (d.kernel_time[i]) { kernel += Math.max(0, Math.min(e, b) - Math.max(s, a)); }
    if (d.kind[i] == "batch" && a <= s && s <= b) { batches += 1; }
  }
  const share = b > a ? (100 * kernel / (b - a)).toFixed(0) : "0";
  lines.push("<b>" + names[r] + "</b>: kernel time " + kernel.toFixed(3) + " ms (" + share +
             "%), " + batches + " batch(es) start in it");
}
div.text = "<b>Selected span</b> " + a.toFixed(3) + " to " + b.toFixed(3) + " ms: " +
  (b - a).toFixed(3) + " ms long &nbsp;·&nbsp; " + lines.join(" &nbsp;·&nbsp; ");
"""


def timeline_figure(model: TimelineModel, colors: dict[str, str], x_range=None, name="timeline"):
    """Stacked lanes of nested slices (run on top), milliseconds since the run began on x:
    box zoom and wheel zoom along time, pan, reset, hover, and box select for measuring."""
    fill = [
        RUN_COLOR if kind == "run" else HOST_COLOR if kind == "host" else colors.get(k, HOST_COLOR)
        for kind, k in zip(model.data["kind"], model.data["kernel"])
    ]
    source = ColumnDataSource(dict(model.data, color=fill))
    fig = figure(
        title=f"{model.policy}: run, host phases, batches and their steps ({model.total_ms:.1f} ms)",
        name=name,
        height=90 + 34 * max(len(model.lanes), 1),
        sizing_mode="stretch_width",
        y_range=list(reversed(model.lanes)),
        x_range=x_range if x_range is not None else Range1d(0, max(model.total_ms, 1e-3) * 1.02),
        x_axis_label="ms since the run began",
        tools="",
        toolbar_location="above",
    )
    bars = fig.hbar(
        y="lane",
        left="start_ms",
        right="end_ms",
        height=0.8,
        color="color",
        fill_alpha="alpha",
        source=source,
        name="bars",
        line_color="white",
        line_width=0.5,
    )
    bars.nonselection_glyph.fill_alpha = 0.15
    zoom = BoxZoomTool(dimensions="width")
    wheel = WheelZoomTool(dimensions="width")
    select = BoxSelectTool(
        dimensions="width", renderers=[bars], name="measure", description=MEASURE_TOOL
    )
    hover = HoverTool(
        renderers=[bars],
        tooltips=[
            ("what", "@name (@kind)"),
            ("kernel", "@kernel"),
            ("batch", "@batch_text"),
            ("batch size", "@size_text"),
            ("start", "@start_ms{0.000} ms"),
            ("duration", "@duration_ms{0.000} ms"),
            ("bytes gathered", "@bytes_text"),
        ],
    )
    fig.add_tools(zoom, wheel, PanTool(dimensions="width"), select, ResetTool(), SaveTool(), hover)
    fig.toolbar.active_drag = zoom
    fig.toolbar.active_scroll = wheel
    fig.ygrid.grid_line_color = None
    return fig


def timeline_batch_at(fig, x: float, y: float) -> int | None:
    """The run-wide batch number of the batch (or gather / kernel / scatter step) drawn at
    data point ``(x, y)`` of a timeline figure (a click), or ``None`` on anything else. The
    number is the schedule's (bar ``i`` of the schedule view is batch ``i``); the timeline
    hover shows both (``"3 (launch 4)"``)."""
    lanes = list(fig.y_range.factors)  # bottom to top: factor k spans y in [k, k + 1)
    if not 0 <= y < len(lanes):
        return None
    lane = lanes[int(y)]
    data = fig.select_one({"name": "bars"}).data_source.data
    for at, start, end, batch in zip(data["lane"], data["start_ms"], data["end_ms"], data["batch"]):
        if at == lane and start <= x <= end and batch >= 0:
            return batch
    return None


def timeline_pair(trace_a: Trace, trace_b: Trace | None = None):
    """Policy A's timeline above policy B's, on one shared time axis (zooming one zooms both),
    and under them the measurement of a box-selected span (a Div, ``name="timeline-measure"``)."""
    traces = [trace_a] if trace_b is None else [trace_a, trace_b]
    colors = kernel_colors(*traces)
    models = [timeline_model(trace) for trace in traces]
    x_range = Range1d(0, max([m.total_ms for m in models] + [1e-3]) * 1.02)
    figures = [
        timeline_figure(model, colors, x_range, name=f"timeline-{side}")
        for model, side in zip(models, "ab")
    ]
    measure = Div(text=MEASURE_HINT, name="timeline-measure", sizing_mode="stretch_width")
    # the callback writes these into the Div's HTML
    names = [html.escape(f"{side} · {model.policy}") for side, model in zip("AB", models)]
    sources = [fig.select_one({"name": "bars"}).data_source for fig in figures]
    callback = CustomJS(args=dict(sources=sources, names=names, div=measure), code=_MEASURE_JS)
    for fig in figures:
        fig.js_on_event(SelectionGeometry, callback)
    return column(*figures, measure, sizing_mode="stretch_width", name="timeline-pair")
