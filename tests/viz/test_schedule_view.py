"""Schedule and timeline figures: their data, asserted (not their pixels)."""

from bokeh.models import ColumnDataSource, HoverTool, Span

from acrobat.trace import BatchFormed, HostSpan, KernelLaunched, ScheduleFormed
from acrobat.viz.schedule_view import (
    kernel_colors,
    refresh_schedule_pair,
    schedule_figure,
    schedule_model,
    schedule_pair,
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


def test_timeline_has_a_bar_per_host_span_and_launch(treelstm):
    trace = treelstm.runs["dynet-depth"]
    spans, launches = trace.of(HostSpan), trace.of(KernelLaunched)
    model = timeline_model(trace)
    assert len(model.data["lane"]) == len(spans) + len(launches)
    assert model.lanes[0] == "host: total"
    assert set(model.lanes) == {f"host: {s.name}" for s in spans} | {
        f"kernel: {k.kernel}" for k in launches
    }
    kernel_rows = [n for n, kind in enumerate(model.data["kind"]) if kind == "kernel"]
    assert [model.data["size"][n] for n in kernel_rows] == [k.size for k in launches]
    assert [model.data["bytes_gathered"][n] for n in kernel_rows] == [
        k.bytes_gathered for k in launches
    ]
    assert all(d >= 0 for d in model.data["duration_ms"])


def test_timeline_figure_hover_and_shared_time_axis(treelstm):
    a, b = treelstm.runs["acrobat"], treelstm.runs["dynet-depth"]
    fig_a, fig_b = timeline_pair(a, b).children
    assert fig_a.x_range is fig_b.x_range
    assert fig_a.x_range.end >= max(e.end_ms for e in a.of(HostSpan))
    (hover,) = fig_a.select(type=HoverTool)
    fields = dict(hover.tooltips)
    assert {"kernel", "batch size", "duration", "bytes gathered"} <= set(fields)
    source = fig_a.select_one({"name": "bars"}).data_source
    assert isinstance(source, ColumnDataSource)
    assert list(fig_a.y_range.factors) == list(reversed(timeline_model(a).lanes))


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
