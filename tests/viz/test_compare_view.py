"""Compare view: rows from RunSummary, four metric charts, a table."""

import pytest

from acrobat.trace import RunSummary, Trace
from acrobat.viz.compare_view import (
    ALL_ON,
    METRICS,
    compare_data,
    compare_figure,
    compare_row,
    compare_table_html,
    options_label,
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


def test_table_marks_the_fastest(treelstm):
    rows = [compare_row(t) for t in treelstm.runs.values()]
    table = compare_table_html(rows)
    assert table.count("<tr>") == len(rows) + 1
    best = min(rows, key=lambda r: r.total_ms)
    assert f"<b>{best.total_ms:.2f}</b>" in table
    assert "No runs yet" in compare_table_html([])
