"""Schedule and kernel-timeline view models and their Bokeh figures.

Schedule: the batches of a run in launch order (``BatchFormed``), one bar per batch whose height
is the batch size and whose colour is the kernel; a vertical span marks the lower bound (the
fewest batches any schedule could use, summed over run passes from ``ScheduleFormed``). Two
policies are drawn side by side with shared kernel colours and one shared x range; each figure's
title and frame take its policy's colour, legends sit outside the bars, sizes can be drawn on a
log axis, and a click on a bar selects that batch (the explorer links it to the DFG view).

Timeline: a Gantt chart with one lane per host span (``HostSpan``) and one per kernel
(``KernelLaunched``); hovering shows kernel, batch size, duration and bytes gathered.
"""

from __future__ import annotations

from dataclasses import dataclass

from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, HoverTool, Label, Legend, Range1d, Span, TapTool
from bokeh.palettes import Category10, Category20
from bokeh.plotting import figure

from acrobat.trace import BatchFormed, HostSpan, KernelLaunched, ScheduleFormed, Trace
from acrobat.viz.colors import policy_color

HOST_LANE_ORDER = ("total", "graph_construction", "dfg_arrays", "scheduling", "execution")
HOST_COLOR = "#8c959f"


@dataclass(frozen=True)
class ScheduleModel:
    """One run's schedule: a column dict with one row per batch, and its bounds."""

    policy: str
    data: dict[str, list]
    lower_bound: int
    batches: int
    nodes: int
    run_passes: int


@dataclass(frozen=True)
class TimelineModel:
    """One run's Gantt chart: lanes top to bottom and a column dict with one row per bar."""

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
            name="lower_bound_label",
        )
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
    fig.select_one({"name": "lower_bound"}).location = model.lower_bound
    label = fig.select_one({"name": "lower_bound_label"})
    label.x, label.text = model.lower_bound, f"lower bound {model.lower_bound}"


def _shared_end(models: list[ScheduleModel]) -> float:
    return max([max(m.batches, m.lower_bound, 1) for m in models]) * 1.04


def schedule_pair(trace_a: Trace, trace_b: Trace | None = None, log_y: bool = False):
    """Policy A's schedule beside policy B's (one figure when B is absent), with shared kernel
    colours and one shared x range (batch index), so equal positions line up. Each has its own
    y axis: eager's batches of 1 would vanish beside batches of 1000 (or use ``log_y``)."""
    traces = [trace_a] if trace_b is None else [trace_a, trace_b]
    colors = kernel_colors(*traces)
    models = [schedule_model(trace) for trace in traces]
    x_range = Range1d(0, _shared_end(models))
    figures = [
        schedule_figure(model, colors, f"schedule-{side}", x_range, log_y)
        for model, side in zip(models, "ab")
    ]
    return row(*figures, sizing_mode="stretch_width", name="schedule-pair")


def refresh_schedule_pair(
    layout, trace_a: Trace, trace_b: Trace | None = None, log_y: bool = False
) -> bool:
    """Show new runs in a layout made by ``schedule_pair``, in place. False (and nothing
    changed) when the layout has a different number of figures or y scale: build a new one."""
    traces = [trace_a] if trace_b is None else [trace_a, trace_b]
    if layout is None or len(layout.children) != len(traces):
        return False
    if any((fig.y_scale.__class__.__name__ == "LogScale") != log_y for fig in layout.children):
        return False
    colors = kernel_colors(*traces)
    models = [schedule_model(trace) for trace in traces]
    layout.children[0].x_range.end = _shared_end(models)
    for fig, model in zip(layout.children, models):
        fill_schedule_figure(fig, model, colors)
    return True


def timeline_model(trace: Trace) -> TimelineModel:
    """Host spans and kernel launches of ``trace`` as Gantt bars on named lanes."""
    spans = trace.of(HostSpan)
    launches = trace.of(KernelLaunched)
    host_names = sorted({s.name for s in spans}, key=_host_rank)
    kernels = sorted({launch.kernel for launch in launches})
    lanes = tuple(f"host: {name}" for name in host_names) + tuple(f"kernel: {k}" for k in kernels)
    rows = [
        ("host", f"host: {s.name}", s.name, "", None, s.start_ms, s.end_ms, None) for s in spans
    ]
    rows += [
        (
            "kernel",
            f"kernel: {k.kernel}",
            f"batch {k.index}",
            k.kernel,
            k.size,
            k.start_ms,
            k.end_ms,
            k.bytes_gathered,
        )
        for k in launches
    ]
    keys = ("kind", "lane", "name", "kernel", "size", "start_ms", "end_ms", "bytes_gathered")
    data = {key: [r[n] for r in rows] for n, key in enumerate(keys)}
    data["duration_ms"] = [end - start for start, end in zip(data["start_ms"], data["end_ms"])]
    data["size_text"] = ["—" if s is None else str(s) for s in data["size"]]
    data["bytes_text"] = ["—" if b is None else f"{b:,}" for b in data["bytes_gathered"]]
    total = max(data["end_ms"], default=0.0)
    return TimelineModel(_policy(trace), lanes, data, total)


def _host_rank(name: str) -> tuple[int, str]:
    order = HOST_LANE_ORDER.index(name) if name in HOST_LANE_ORDER else len(HOST_LANE_ORDER)
    return (order, name)


def timeline_figure(model: TimelineModel, colors: dict[str, str], x_range=None, name="timeline"):
    """The Gantt chart: lanes on y (host spans first), milliseconds since the run began on x."""
    fill = [
        HOST_COLOR if kind == "host" else colors.get(k, HOST_COLOR)
        for kind, k in zip(model.data["kind"], model.data["kernel"])
    ]
    source = ColumnDataSource(dict(model.data, color=fill))
    fig = figure(
        title=f"{model.policy}: host spans and kernel launches ({model.total_ms:.1f} ms)",
        name=name,
        height=80 + 34 * max(len(model.lanes), 1),
        sizing_mode="stretch_width",
        y_range=list(reversed(model.lanes)),
        x_range=x_range if x_range is not None else Range1d(0, max(model.total_ms, 1e-3) * 1.02),
        x_axis_label="ms since the run began",
        tools="xpan,xwheel_zoom,reset,save",
        toolbar_location="above",
    )
    bars = fig.hbar(
        y="lane",
        left="start_ms",
        right="end_ms",
        height=0.7,
        color="color",
        source=source,
        name="bars",
        line_color="white",
        line_width=0.5,
    )
    fig.add_tools(
        HoverTool(
            renderers=[bars],
            tooltips=[
                ("what", "@name"),
                ("kernel", "@kernel"),
                ("batch size", "@size_text"),
                ("duration", "@duration_ms{0.000} ms"),
                ("bytes gathered", "@bytes_text"),
            ],
        )
    )
    return fig


def timeline_pair(trace_a: Trace, trace_b: Trace | None = None):
    """Policy A's timeline above policy B's, on one shared time axis."""
    traces = [trace_a] if trace_b is None else [trace_a, trace_b]
    colors = kernel_colors(*traces)
    models = [timeline_model(trace) for trace in traces]
    x_range = Range1d(0, max([m.total_ms for m in models] + [1e-3]) * 1.02)
    figures = [
        timeline_figure(model, colors, x_range, name=f"timeline-{side}")
        for model, side in zip(models, "ab")
    ]
    return column(*figures, sizing_mode="stretch_width", name="timeline-pair")
