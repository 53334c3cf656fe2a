"""Compare view model: latency, launches, mean batch size and host overhead across runs.

A row per configuration (policy and option set: which optimizations were off). Latency is the
median wall time of an interleaved measurement (``acrobat.measure``) with its interquartile
range; launches, batch sizes and host overhead come from the run's statistics. A session the
explorer saved carries its timed runs (``acrobat.viz.timing_record``); a row read from another
trace has one run's latency only (``runs == 1``). Host overhead is the host's own work
before kernels run: DFG construction plus scheduling (``gen_ms + sched_ms``), the cost ACRoBat
moves to compile time.

No row is called faster than another unless their spreads are apart and their medians differ by
more than ``NOISE_FLOOR`` (on a shared machine, run order and cache state alone move a median by
a few percent): the table names a winner only then, and says "within noise" otherwise. The
status line words the verdict between policy A and B with the same rule (:func:`verdict_text`).
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass

from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, HoverTool, Whisker
from bokeh.plotting import figure

from acrobat.trace import RunSummary, Trace
from acrobat.viz.colors import policy_color

METRICS = (
    ("total_ms", "latency (ms, median; whiskers: IQR)"),
    ("launches", "kernel launches"),
    ("mean_batch", "mean batch size"),
    ("host_ms", "host overhead: DFG + scheduling (ms)"),
)
ALL_ON = "all optimizations"
MIN_RUNS_FOR_WINNER = 3  # fewer timed runs than this: no row is called the fastest
NOISE_FLOOR = 0.05  # medians closer than this (relative) are within noise
BUSY_SHARE = 0.5  # others using more of the CPUs than this while timing: no winner is called
SORT_KEYS = {
    "order run": None,
    "latency": "total_ms",
    "launches": "launches",
    "mean batch": "mean_batch",
    "host ms": "host_ms",
    "policy": "policy",
}


@dataclass(frozen=True)
class CompareRow:
    """One configuration's headline numbers; latency as a median with its spread."""

    label: str
    policy: str
    options: str
    total_ms: float  # median wall time (ms)
    launches: int
    mean_batch: float
    host_ms: float
    exe_ms: float
    lower_bound: int
    nodes: int
    total_q1_ms: float = 0.0  # latency quartiles (== total_ms for a single run)
    total_q3_ms: float = 0.0
    runs: int = 1  # timed runs behind the latency
    others_busy: float = 0.0  # share of the CPUs other processes used while it was timed

    def overlaps(self, other: CompareRow) -> bool:
        """Whether the two latencies are within noise: their IQRs overlap, or their medians
        are closer than ``NOISE_FLOOR``."""
        return within_noise(
            (self.total_ms, self.total_q1_ms, self.total_q3_ms),
            (other.total_ms, other.total_q1_ms, other.total_q3_ms),
        )


def within_noise(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """``(median, q1, q3)`` twice: whether no difference can be claimed between them (their
    interquartile ranges overlap, or the medians differ by less than ``NOISE_FLOOR``)."""
    (ma, a1, a3), (mb, b1, b3) = a, b
    if a1 <= b3 and b1 <= a3:
        return True
    return abs(ma - mb) < NOISE_FLOOR * max(min(ma, mb), 1e-12)


def verdict_text(a, b, name_a: str, name_b: str) -> str:
    """How the explorer words policy ``a`` against ``b`` (two ``acrobat.Spread``): too few
    runs, within noise, or which is faster and by how much."""
    n = min(a.n, b.n)
    if n < MIN_RUNS_FOR_WINNER:
        return f"too few timed runs to call a winner (n={n})"
    if within_noise((a.median, a.q1, a.q3), (b.median, b.q1, b.q3)):
        return f"{name_a} vs {name_b}: within noise"
    fast, slow = (name_a, name_b) if a.median <= b.median else (name_b, name_a)
    ratio = max(a.median, b.median) / max(min(a.median, b.median), 1e-12)
    return f"{fast} is {ratio:.2f}x faster than {slow} (spreads apart)"


def options_label(disabled: list[str] | tuple[str, ...]) -> str:
    """``"all optimizations"`` or ``"no fusion, no coarsening"``."""
    return ", ".join(f"no {name}" for name in disabled) if disabled else ALL_ON


def compare_row_from_stats(
    stats: dict, options: str = ALL_ON, spread=None, others_busy: float = 0.0
) -> CompareRow:
    """A row from one run's ``stats``; latency from ``spread`` (an ``acrobat.Spread`` of
    wall times) when given, else the run's own ``total_ms``."""
    policy = str(stats.get("policy", "?"))
    total = float(stats.get("total_ms", 0.0))
    q1 = q3 = total
    runs = 1
    if spread is not None:
        total, q1, q3, runs = spread.median, spread.q1, spread.q3, spread.n
    return CompareRow(
        label=f"{policy} · {options}",
        policy=policy,
        options=options,
        total_ms=total,
        launches=int(stats.get("launches", 0)),
        mean_batch=float(stats.get("mean_batch", 0.0)),
        host_ms=float(stats.get("gen_ms", 0.0)) + float(stats.get("sched_ms", 0.0)),
        exe_ms=float(stats.get("exe_ms", 0.0)),
        lower_bound=int(stats.get("lower_bound", 0)),
        nodes=int(stats.get("nodes", 0)),
        total_q1_ms=q1,
        total_q3_ms=q3,
        runs=runs,
        others_busy=others_busy,
    )


def compare_row(
    trace: Trace, options: str = ALL_ON, spread=None, others_busy: float = 0.0
) -> CompareRow:
    """The row of one run trace (its last ``RunSummary``); ``ValueError`` without one."""
    summaries = trace.of(RunSummary)
    if not summaries:
        raise ValueError("the trace has no RunSummary: it is not a finished run")
    return compare_row_from_stats(summaries[-1].stats, options, spread, others_busy)


def sort_rows(rows: list[CompareRow], key: str = "order run", descending: bool = False):
    """The rows ordered by one of ``SORT_KEYS`` (``"order run"`` keeps them as they came)."""
    field = SORT_KEYS.get(key)
    if field is None:
        return list(reversed(rows)) if descending else list(rows)
    return sorted(rows, key=lambda r: getattr(r, field), reverse=descending)


def fastest(rows: list[CompareRow]) -> tuple[CompareRow | None, str]:
    """The row whose latency is apart from (and below) every other row's, and a sentence
    saying so, or ``(None, why no row is called fastest)``."""
    if len(rows) < 2:
        return None, ""
    best = min(rows, key=lambda r: r.total_ms)
    busy = max(r.others_busy for r in rows)
    if busy > BUSY_SHARE:
        return None, (
            f"No fastest row: other processes used up to {busy:.0%} of the CPUs while these "
            "were timed. Measure again on a quieter machine."
        )
    if min(r.runs for r in rows) < MIN_RUNS_FOR_WINNER:
        n = min(r.runs for r in rows)
        return None, f"No fastest row: some latencies come from {n} run(s), too few to compare."
    tied = [r.label for r in rows if r is not best and r.overlaps(best)]
    if tied:
        names = ", ".join(html.escape(t) for t in tied[:4]) + (" ..." if len(tied) > 4 else "")
        return None, (
            f"Fastest within noise: {html.escape(best.label)} and {names} "
            f"(their interquartile ranges overlap or their medians are within "
            f"{NOISE_FLOOR:.0%})."
        )
    return best, (
        f"Fastest: {html.escape(best.label)} (its spread is apart from every other row's "
        f"and its median more than {NOISE_FLOOR:.0%} lower)."
    )


def compare_data(rows: list[CompareRow]) -> dict[str, list]:
    """The rows as a column dict (one entry per field), for a ColumnDataSource."""
    fields = list(asdict(rows[0])) if rows else [f for f in CompareRow.__dataclass_fields__]
    return {name: [getattr(row, name) for row in rows] for name in fields}


def compare_figure(rows: list[CompareRow], log_scale: bool = False):
    """A 2×2 grid of bar charts, one per metric, one bar per row in the policy's colour
    (``policy_color``: the same in every view); latency has IQR whiskers. ``log_scale`` puts
    the metric axes on a log scale (so one slow policy does not flatten the others)."""
    data = compare_data(rows)
    source = ColumnDataSource(dict(data, color=[policy_color(p) for p in data["policy"]]))
    labels = data["label"] or ["(no runs yet)"]
    figures = []
    for metric, title in METRICS:
        values = [v for v in data[metric] if v > 0]
        fig = figure(
            title=title,
            name=f"compare-{metric}",
            y_range=list(reversed(labels)),
            x_axis_type="log" if log_scale else "linear",
            height=70 + 26 * len(labels),
            sizing_mode="stretch_width",
            tools="save",
            toolbar_location=None,
        )
        left = min(values) / 2 if log_scale and values else 0
        bars = fig.hbar(
            y="label", left=left, right=metric, height=0.7, color="color", source=source
        )
        tips = [("run", "@label"), (title, f"@{metric}{{0.[00]}}")]
        if metric == "total_ms":
            tips += [("IQR", "@total_q1_ms{0.[00]} .. @total_q3_ms{0.[00]}"), ("runs", "@runs")]
            fig.add_layout(
                Whisker(
                    source=source,
                    base="label",
                    lower="total_q1_ms",
                    upper="total_q3_ms",
                    dimension="width",
                    line_color="#24292f",
                )
            )
        fig.add_tools(HoverTool(renderers=[bars], tooltips=tips))
        fig.x_range.start = left
        figures.append(fig)
    return gridplot(figures, ncols=2, sizing_mode="stretch_width", toolbar_location=None)


def compare_table_html(rows: list[CompareRow]) -> str:
    """The rows as an HTML table (latency as median and IQR), the fastest in bold only when
    its spread is apart from every other row's, and a line saying which is fastest or that
    the fastest are within noise."""
    if not rows:
        return "<p>No runs yet: run the model, or press <i>Compare all policies</i>.</p>"
    best, verdict = fastest(rows)
    head = (
        "<tr><th>policy</th><th>options</th><th>latency ms (median)</th><th>IQR</th>"
        "<th>runs</th><th>launches</th><th>lower bound</th><th>mean batch</th>"
        "<th>host ms</th><th>kernels ms</th></tr>"
    )
    body = ""
    for row in rows:
        latency = f"{row.total_ms:.2f}"
        latency = f"<b>{latency}</b>" if row is best else latency
        iqr = f"{row.total_q1_ms:.2f}–{row.total_q3_ms:.2f}" if row.runs > 1 else "(1 run)"
        swatch = (
            f"<span class='policy-swatch' style='background:{policy_color(row.policy)}'></span>"
        )
        body += (
            f"<tr><td>{swatch}{html.escape(row.policy)}</td><td>{html.escape(row.options)}</td>"
            f"<td class='num'>{latency}</td><td class='num'>{iqr}</td>"
            f"<td class='num'>{row.runs}</td><td class='num'>{row.launches}</td>"
            f"<td class='num'>{row.lower_bound}</td><td class='num'>{row.mean_batch:.1f}</td>"
            f"<td class='num'>{row.host_ms:.2f}</td><td class='num'>{row.exe_ms:.2f}</td></tr>"
        )
    note = f"<p class='compare-verdict'>{verdict}</p>" if verdict else ""
    return f'{note}<table class="acrobat-table compare-table">{head}{body}</table>'
