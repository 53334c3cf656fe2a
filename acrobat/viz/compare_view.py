"""Compare view model: latency, launches, mean batch size and host overhead across runs.

A row per run, from its ``RunSummary`` statistics, labelled by policy and option set (which
optimizations were off). Host overhead is the host's own work before kernels run: DFG
construction plus scheduling (``gen_ms + sched_ms``), the cost ACRoBat moves to compile time.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass

from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.palettes import Category10
from bokeh.plotting import figure

from acrobat.trace import RunSummary, Trace

METRICS = (
    ("total_ms", "latency (ms)"),
    ("launches", "kernel launches"),
    ("mean_batch", "mean batch size"),
    ("host_ms", "host overhead: DFG + scheduling (ms)"),
)
ALL_ON = "all optimizations"


@dataclass(frozen=True)
class CompareRow:
    """One run's headline numbers."""

    label: str
    policy: str
    options: str
    total_ms: float
    launches: int
    mean_batch: float
    host_ms: float
    exe_ms: float
    lower_bound: int
    nodes: int


def options_label(disabled: list[str] | tuple[str, ...]) -> str:
    """``"all optimizations"`` or ``"no fusion, no coarsening"``."""
    return ", ".join(f"no {name}" for name in disabled) if disabled else ALL_ON


def compare_row(trace: Trace, options: str = ALL_ON) -> CompareRow:
    """The row of one run trace (its last ``RunSummary``); ``ValueError`` without one."""
    summaries = trace.of(RunSummary)
    if not summaries:
        raise ValueError("the trace has no RunSummary: it is not a finished run")
    stats = summaries[-1].stats
    policy = str(stats.get("policy", "?"))
    return CompareRow(
        label=f"{policy} · {options}",
        policy=policy,
        options=options,
        total_ms=float(stats.get("total_ms", 0.0)),
        launches=int(stats.get("launches", 0)),
        mean_batch=float(stats.get("mean_batch", 0.0)),
        host_ms=float(stats.get("gen_ms", 0.0)) + float(stats.get("sched_ms", 0.0)),
        exe_ms=float(stats.get("exe_ms", 0.0)),
        lower_bound=int(stats.get("lower_bound", 0)),
        nodes=int(stats.get("nodes", 0)),
    )


def compare_data(rows: list[CompareRow]) -> dict[str, list]:
    """The rows as a column dict (one entry per field), for a ColumnDataSource."""
    fields = list(asdict(rows[0])) if rows else [f for f in CompareRow.__dataclass_fields__]
    return {name: [getattr(row, name) for row in rows] for name in fields}


def compare_figure(rows: list[CompareRow]):
    """A 2×2 grid of bar charts, one per metric, one bar per run coloured by policy."""
    data = compare_data(rows)
    policies = sorted(set(data["policy"]))
    colors = {p: Category10[10][n % 10] for n, p in enumerate(policies)}
    source = ColumnDataSource(dict(data, color=[colors[p] for p in data["policy"]]))
    labels = data["label"] or ["(no runs yet)"]
    figures = []
    for metric, title in METRICS:
        fig = figure(
            title=title,
            name=f"compare-{metric}",
            y_range=list(reversed(labels)),
            height=70 + 26 * len(labels),
            sizing_mode="stretch_width",
            tools="save",
            toolbar_location=None,
        )
        bars = fig.hbar(y="label", right=metric, height=0.7, color="color", source=source)
        fig.add_tools(
            HoverTool(
                renderers=[bars], tooltips=[("run", "@label"), (title, f"@{metric}{{0.[00]}}")]
            )
        )
        fig.x_range.start = 0
        figures.append(fig)
    return gridplot(figures, ncols=2, sizing_mode="stretch_width", toolbar_location=None)


def compare_table_html(rows: list[CompareRow]) -> str:
    """The rows as an HTML table with the fastest latency in bold."""
    if not rows:
        return "<p>No runs yet: run the model, or press <i>Compare all policies</i>.</p>"
    best = min(row.total_ms for row in rows)
    head = (
        "<tr><th>policy</th><th>options</th><th>latency ms</th><th>launches</th>"
        "<th>lower bound</th><th>mean batch</th><th>host ms</th><th>kernels ms</th></tr>"
    )
    body = ""
    for row in rows:
        latency = f"{row.total_ms:.2f}"
        latency = f"<b>{latency}</b>" if row.total_ms == best else latency
        body += (
            f"<tr><td>{html.escape(row.policy)}</td><td>{html.escape(row.options)}</td>"
            f"<td class='num'>{latency}</td><td class='num'>{row.launches}</td>"
            f"<td class='num'>{row.lower_bound}</td><td class='num'>{row.mean_batch:.1f}</td>"
            f"<td class='num'>{row.host_ms:.2f}</td><td class='num'>{row.exe_ms:.2f}</td></tr>"
        )
    return f'<table class="acrobat-table compare-table">{head}{body}</table>'
