"""Schedule and timeline figures: their data, asserted (not their pixels)."""

import pytest
from bokeh.models import (
    BoxSelectTool,
    BoxZoomTool,
    ColumnDataSource,
    HoverTool,
    PanTool,
    ResetTool,
    Span,
    WheelZoomTool,
)

from acrobat.trace import BatchFormed, HostSpan, KernelLaunched, ScheduleFormed
from acrobat.viz.schedule_view import (
    kernel_colors,
    measure_span,
    refresh_schedule_pair,
    schedule_figure,
    schedule_model,
    schedule_pair,
    shares_x,
    timeline_model,
    timeline_pair,
)


def _source(fig, name):
    return fig.select_one({"name": name}).data_source


def test_schedule_source_has_one_row_per_batch(treelstm):
    trace = treelstm.runs["acrobat"]
    formed = trace.of(BatchFormed)
    fig = schedule_figure(schedule_model(trace), kernel_colors(trace))
    data = _source(fig, "batches").data
    assert len(data["size"]) == len(formed)
    assert data["size"] == [b.size for b in formed]
    assert data["kernel"] == [b.kernel for b in formed]
    assert data["position"] == list(range(1, len(formed) + 1))
    assert sum(data["size"]) == sum(s.nodes for s in trace.of(ScheduleFormed))


def test_lower_bound_span_equals_schedule_formed(treelstm):
    trace = treelstm.runs["eager"]
    (formed,) = trace.of(ScheduleFormed)
    fig = schedule_figure(schedule_model(trace), kernel_colors(trace))
    spans = [s for s in fig.select(type=Span) if s.name == "lower_bound"]
    assert len(spans) == 1 and spans[0].location == formed.lower_bound
    assert formed.batches > formed.lower_bound  # eager is far from the bound
    assert fig.title.text.startswith("eager:")


def test_run_passes_are_concatenated_and_bounds_summed(stackrnn):
    trace = stackrnn.runs["acrobat"]
    schedules = trace.of(ScheduleFormed)
    model = schedule_model(trace)
    assert model.run_passes == len(schedules) > 1
    assert model.batches == len(trace.of(BatchFormed)) == sum(s.batches for s in schedules)
    assert model.lower_bound == sum(s.lower_bound for s in schedules)
    assert model.data["run_pass"] == [b.run_pass for b in trace.of(BatchFormed)]


def test_pair_draws_two_policies_with_shared_colours(treelstm):
    a, b = treelstm.runs["acrobat"], treelstm.runs["eager"]
    pair = schedule_pair(a, b)
    fig_a, fig_b = pair.children
    assert (fig_a.name, fig_b.name) == ("schedule-a", "schedule-b")
    for fig, trace in ((fig_a, a), (fig_b, b)):  # each axis fits its own batches
        assert fig.y_range.end >= max(batch.size for batch in trace.of(BatchFormed))
    assert len(_source(fig_a, "batches").data["size"]) == len(a.of(BatchFormed))
    assert len(_source(fig_b, "batches").data["size"]) == len(b.of(BatchFormed))
    colors = kernel_colors(a, b)
    for fig in (fig_a, fig_b):
        data = _source(fig, "batches").data
        assert data["color"] == [colors[k] for k in data["kernel"]]
    assert len(schedule_pair(a).children) == 1


def test_refresh_in_place_keeps_the_figures_and_shows_the_new_runs(treelstm):
    a, b, eager = (treelstm.runs[p] for p in ("acrobat", "dynet-depth", "eager"))
    pair = schedule_pair(a, b)
    fig_a, fig_b = pair.children
    assert refresh_schedule_pair(pair, a, eager)
    assert pair.children == [fig_a, fig_b]
    assert _source(fig_b, "batches").data["size"] == [x.size for x in eager.of(BatchFormed)]
    assert fig_b.title.text.startswith("eager:")
    (bound,) = eager.of(ScheduleFormed)
    assert fig_b.select_one({"name": "lower_bound"}).location == bound.lower_bound
    assert fig_b.x_range.end >= len(eager.of(BatchFormed))
    assert not refresh_schedule_pair(pair, a)  # one figure wanted: the caller rebuilds
    assert not refresh_schedule_pair(None, a, b)


def test_each_policy_can_span_its_own_batches(treelstm):
    a, eager = treelstm.runs["acrobat"], treelstm.runs["eager"]
    shared = schedule_pair(a, eager)
    assert shares_x(shared) and shared.children[0].x_range.end >= len(eager.of(BatchFormed))
    own = schedule_pair(a, eager, shared_x=False)
    fig_a, fig_b = own.children
    assert not shares_x(own)
    n_a, n_b = len(a.of(BatchFormed)), len(eager.of(BatchFormed))
    assert n_a < n_b and n_a <= fig_a.x_range.end < n_b <= fig_b.x_range.end
    assert not refresh_schedule_pair(own, a, eager, shared_x=True)  # the caller rebuilds
    assert refresh_schedule_pair(own, eager, a, shared_x=False)
    assert fig_b.x_range.end < n_b <= fig_a.x_range.end  # each range follows its new run


def test_a_line_marks_where_each_run_pass_starts(stackrnn):
    trace = stackrnn.runs["acrobat"]
    model = schedule_model(trace)
    passes = model.data["run_pass"]
    assert len(model.pass_starts) == model.run_passes - 1 > 0
    for x in model.pass_starts:  # between the last batch of one pass and the next's first
        assert passes[x - 1] + 1 == passes[x]
    fig = schedule_figure(model, kernel_colors(trace))
    assert _source(fig, "pass_starts").data["x"] == list(model.pass_starts)


def test_timeline_has_a_slice_per_span_launch_and_step(treelstm):
    trace = treelstm.runs["dynet-depth"]
    spans, launches = trace.of(HostSpan), trace.of(KernelLaunched)
    model = timeline_model(trace)
    kinds = model.data["kind"]
    # the run, its host phases, a batch per launch and its gather / kernel / scatter steps
    assert kinds.count("run") == 1 and kinds.count("host") == len(spans) - 1
    assert kinds.count("batch") == len(launches)
    assert kinds.count("gather") == kinds.count("kernel") == kinds.count("scatter") == len(launches)
    assert model.lanes == ("run", "host phases", "batches", "gather · kernel · scatter")
    batch_rows = [n for n, kind in enumerate(kinds) if kind == "batch"]
    assert [model.data["size"][n] for n in batch_rows] == [k.size for k in launches]
    assert [model.data["kernel"][n] for n in batch_rows] == [k.kernel for k in launches]
    assert [model.data["bytes_gathered"][n] for n in batch_rows] == [
        k.bytes_gathered for k in launches
    ]
    kernel_rows = [n for n, kind in enumerate(kinds) if kind == "kernel"]
    assert [model.data["start_ms"][n] for n in kernel_rows] == [k.start_ms for k in launches]
    assert all(d >= 0 for d in model.data["duration_ms"])
    assert model.total_ms == max(s.end_ms for s in spans)


def test_timeline_lanes_nest_by_time(stackrnn):
    """A fiber program flushes inside graph construction: its phases sit one lane lower."""
    model = timeline_model(stackrnn.runs["acrobat"])
    d = model.data
    lane = {name: d["lane"][n] for n, name in enumerate(d["name"])}
    assert model.lanes == (
        "run",
        "host phases",
        "host phases (nested 1)",
        "batches",
        "gather · kernel · scatter",
    )
    assert lane["graph_construction"] == "host phases"
    inner = [
        n
        for n, name in enumerate(d["name"])
        if name == "execution"
        and d["end_ms"][n] <= d["end_ms"][d["name"].index("graph_construction")]
    ]
    assert inner and {d["lane"][n] for n in inner} == {"host phases (nested 1)"}


def test_measure_span_sums_kernel_time_inside(treelstm):
    trace = treelstm.runs["acrobat"]
    model = timeline_model(trace)
    launches = trace.of(KernelLaunched)
    total = sum(k.end_ms - k.start_ms for k in launches)
    length, kernel, batches = measure_span(model, 0.0, model.total_ms)
    assert length == model.total_ms
    assert kernel == pytest.approx(total) and batches == len(launches)
    first = launches[0]
    half = (first.start_ms + first.end_ms) / 2
    _, kernel, batches = measure_span(model, half, first.start_ms)  # either order
    assert kernel == pytest.approx(half - first.start_ms) and batches == 0


def test_timeline_figure_tools_hover_and_shared_time_axis(treelstm):
    a, b = treelstm.runs["acrobat"], treelstm.runs["dynet-depth"]
    fig_a, fig_b, measure = timeline_pair(a, b).children
    assert fig_a.x_range is fig_b.x_range
    assert fig_a.x_range.end >= max(e.end_ms for e in a.of(HostSpan))
    (hover,) = fig_a.select(type=HoverTool)
    fields = dict(hover.tooltips)
    assert {"what", "start", "kernel", "batch size", "duration", "bytes gathered"} <= set(fields)
    tools = {type(t) for t in fig_a.toolbar.tools}
    assert {BoxZoomTool, WheelZoomTool, PanTool, ResetTool, BoxSelectTool} <= tools
    source = fig_a.select_one({"name": "bars"}).data_source
    assert isinstance(source, ColumnDataSource)
    assert list(fig_a.y_range.factors) == list(reversed(timeline_model(a).lanes))
    # the measurement Div is fed by both figures' box selections, over both runs' data
    assert measure.name == "timeline-measure" and "Measure" in measure.text
    for fig in (fig_a, fig_b):
        (callback,) = fig.js_event_callbacks["selectiongeometry"]
        assert callback.args["div"] is measure
        assert callback.args["names"] == ["A · acrobat", "B · dynet-depth"]
        assert callback.args["sources"][1] is fig_b.select_one({"name": "bars"}).data_source


def test_timeline_colours_follow_the_schedule_view(treelstm):
    a, b = treelstm.runs["acrobat"], treelstm.runs["eager"]
    colors = kernel_colors(a, b)
    fig_a, fig_b, _ = timeline_pair(a, b).children
    for fig in (fig_a, fig_b):
        d = fig.select_one({"name": "bars"}).data_source.data
        for kind, kernel, color in zip(d["kind"], d["kernel"], d["color"]):
            if kind in ("batch", "kernel"):
                assert color == colors[kernel]


def test_pair_shares_the_x_range_keeps_legends_outside_and_taps_bars(treelstm):
    from bokeh.models import Legend, TapTool

    a, eager = treelstm.runs["acrobat"], treelstm.runs["eager"]
    fig_a, fig_b = schedule_pair(a, eager).children
    assert fig_a.x_range is fig_b.x_range
    assert fig_a.x_range.end >= max(len(a.of(BatchFormed)), len(eager.of(BatchFormed)))
    for fig in (fig_a, fig_b):
        (legend,) = fig.select(type=Legend)
        assert legend in fig.right and legend not in fig.center  # never over the bars
        assert fig.select_one(TapTool).renderers == [fig.select_one({"name": "batches"})]
    data = _source(fig_a, "batches").data
    assert data["batch"] == list(range(len(a.of(BatchFormed))))  # as NodeRecorded.batch


def test_log_scale_draws_bars_from_below_one_and_rebuilds(treelstm):
    from bokeh.models import LogScale

    a, eager = treelstm.runs["acrobat"], treelstm.runs["eager"]
    pair = schedule_pair(a, eager, log_y=True)
    fig = pair.children[1]
    assert isinstance(fig.y_scale, LogScale) and 0 < fig.y_range.start < 1
    assert set(_source(fig, "batches").data["bottom"]) == {fig.y_range.start}
    assert refresh_schedule_pair(pair, a, eager, log_y=True)
    assert not refresh_schedule_pair(pair, a, eager)  # linear wanted: the caller rebuilds


def test_the_wheel_zooms_at_once_and_the_lower_bound_label_sits_over_the_bars(treelstm):
    from bokeh.models import Label, WheelZoomTool

    from acrobat.viz.schedule_view import kernel_colors, schedule_figure, schedule_model

    trace = treelstm.runs["acrobat"]
    fig = schedule_figure(schedule_model(trace), kernel_colors(trace))
    assert isinstance(fig.toolbar.active_scroll, WheelZoomTool)
    assert fig.toolbar.active_scroll.dimensions == "width"
    label = fig.select_one({"name": "lower_bound_label", "type": Label})
    assert label.level == "overlay" and label.background_fill_color is not None
