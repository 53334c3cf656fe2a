"""Compare view: rows from RunSummary, four metric charts, a table."""

import pytest

from acrobat.trace import RunSummary, Trace
from acrobat.viz.colors import policy_color
from acrobat.viz.compare_view import (
    ALL_ON,
    METRICS,
    compare_data,
    compare_figure,
    compare_row,
    compare_table_html,
    fastest,
    options_label,
    sort_rows,
)


def test_row_reads_the_run_summary(treelstm):
    trace = treelstm.runs["eager"]
    stats = trace.of(RunSummary)[-1].stats
    row = compare_row(trace, options_label(("fusion",)))
    assert row.policy == "eager" and row.options == "no fusion"
    assert row.label == "eager · no fusion"
    assert row.total_ms == stats["total_ms"] and row.launches == stats["launches"]
    assert row.mean_batch == stats["mean_batch"] and row.lower_bound == stats["lower_bound"]
    assert row.host_ms == pytest.approx(stats["gen_ms"] + stats["sched_ms"])
    assert options_label(()) == ALL_ON


def test_a_trace_without_summary_is_refused():
    with pytest.raises(ValueError, match="RunSummary"):
        compare_row(Trace())


def test_figure_has_a_chart_per_metric_and_a_bar_per_run(treelstm):
    rows = [compare_row(t) for t in treelstm.runs.values()]
    grid = compare_figure(rows)
    figures = [child[0] for child in grid.children]
    assert [f.name for f in figures] == [f"compare-{metric}" for metric, _ in METRICS]
    for fig, (metric, _) in zip(figures, METRICS):
        data = fig.renderers[0].data_source.data
        assert data["label"] == [r.label for r in rows]
        assert data[metric] == [getattr(r, metric) for r in rows]
    assert compare_data(rows)["launches"] == [r.launches for r in rows]


def _spread(*samples):
    import acrobat

    return acrobat.baselines.measure.spread(samples)


def test_table_names_a_winner_only_when_spreads_are_apart(treelstm):
    rows = [compare_row(t) for t in treelstm.runs.values()]
    table = compare_table_html(rows)
    assert table.count("<tr>") == len(rows) + 1
    assert "<b>" not in table and "too few to compare" in table  # one run each: no winner
    assert "No runs yet" in compare_table_html([])

    trace_a, trace_b = treelstm.runs["acrobat"], treelstm.runs["dynet-depth"]
    apart = [
        compare_row(trace_a, spread=_spread(10, 11, 12, 11, 10)),
        compare_row(trace_b, spread=_spread(20, 22, 21, 20, 23)),
    ]
    table = compare_table_html(apart)
    assert "<b>11.00</b>" in table and "Fastest: acrobat" in table
    best, _ = fastest(apart)
    assert best is apart[0] and apart[0].runs == 5 and apart[0].total_q1_ms == 10

    close = [
        compare_row(trace_a, spread=_spread(10, 11, 14, 12, 10)),
        compare_row(trace_b, spread=_spread(12, 13, 11, 15, 12)),
    ]
    table = compare_table_html(close)
    assert "<b>" not in table and "within noise" in table
    assert fastest(close)[0] is None


def test_rows_sort_and_the_figure_takes_a_log_scale(treelstm):
    rows = [compare_row(t) for t in treelstm.runs.values()]
    by_launches = sort_rows(rows, "launches", descending=True)
    assert [r.launches for r in by_launches] == sorted((r.launches for r in rows), reverse=True)
    assert sort_rows(rows) == rows and sort_rows(rows, descending=True) == rows[::-1]
    grid = compare_figure(rows, log_scale=True)
    latency = grid.children[0][0]
    assert type(latency.x_scale).__name__ == "LogScale" and latency.x_range.start > 0
    colors = latency.renderers[0].data_source.data["color"]
    assert colors == [policy_color(r.policy) for r in rows]
    assert policy_color("acrobat") != policy_color("eager")
    assert policy_color("my-policy") == policy_color("my-policy")  # stable for new ones


def test_no_winner_is_called_when_the_machine_was_busy(treelstm):
    trace_a, trace_b = treelstm.runs["acrobat"], treelstm.runs["dynet-depth"]
    rows = [
        compare_row(trace_a, spread=_spread(10, 11, 12, 11, 10), others_busy=0.8),
        compare_row(trace_b, spread=_spread(20, 22, 21, 20, 23), others_busy=0.8),
    ]
    best, why = fastest(rows)
    assert best is None and "80% of the CPUs" in why
    assert "<b>" not in compare_table_html(rows)
