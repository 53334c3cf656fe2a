"""The report's Bokeh page: acrobat's speed-up over every other system on a log axis with a 1x
line, time per batch split into host and execution, launches against the lower bound, and a
roofline. Every time carries its interquartile range as a whisker, so a bar whose whisker
crosses the 1x line is a difference the measurement cannot claim.

Bokeh belongs to the optional ``viz`` extra; :func:`html` raises
:class:`~acrobat.errors.MissingExtraError` without it (the CSV and markdown need nothing).
"""

from __future__ import annotations

from collections import defaultdict

from acrobat.bench.report import LIMIT_SYSTEMS, limits, quartile
from acrobat.errors import MissingExtraError

WIDTH = 900
APART = {"faster": "#31a354", "slower": "#de2d26", "within noise": "#969696"}


def _bokeh():
    try:
        import bokeh.embed
        import bokeh.layouts
        import bokeh.models
        import bokeh.plotting
        import bokeh.resources
    except ImportError as e:
        raise MissingExtraError(
            "the HTML report draws its plots with Bokeh, which is not installed",
            hint="pip install 'acrobat[viz]'",
        ) from e
    return bokeh


def speedups(rows: list[dict]) -> list[dict]:
    """Per (model, size, batch) and other system: their time / acrobat's, with the range the
    two IQRs allow (their q1 / acrobat's q3 .. their q3 / acrobat's q1) and whether that
    range lies above 1 (acrobat faster), below (slower) or across it (within noise)."""
    groups: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        if r.get("system") not in LIMIT_SYSTEMS and r.get("total_ms") and not r.get("disabled"):
            name = r["system"] if r["system"] != "acrobat" else f"acrobat/{r['policy']}"
            groups[(r["model"], r["size"], r["batch"])][name] = r
    out = []
    for (m, s, b), cols in groups.items():
        base = cols.get("acrobat/acrobat")
        for name, r in cols.items() if base else ():
            if name == "acrobat/acrobat":
                continue
            low, high = (
                quartile(r, "q1") / quartile(base, "q3"),
                quartile(r, "q3") / quartile(base, "q1"),
            )
            verdict = "faster" if low > 1 else "slower" if high < 1 else "within noise"
            label = f"{m}/{s}/b{b} vs {name}"
            ratio = r["total_ms"] / base["total_ms"]
            out.append(dict(label=label, ratio=ratio, low=low, high=high, verdict=verdict))
    return out


def _speedup_figure(bk, rows: list[dict]):
    data = speedups(rows)
    labels = [d["label"] for d in data] or ["-"]
    fig = bk.plotting.figure(
        y_range=labels,
        x_axis_type="log",
        height=max(300, 18 * len(labels)),
        width=WIDTH,
        title="speed-up of acrobat: their time / acrobat's (log axis; whiskers: the IQRs' range)",
        tools="hover,save",
        tooltips="@label: @ratio{0.00}x (@low{0.00}..@high{0.00}), acrobat @verdict",
    )
    if data:
        src = bk.models.ColumnDataSource(
            {k: [d[k] for d in data] for k in data[0]}
            | {"color": [APART[d["verdict"]] for d in data]}
        )
        fig.hbar(y="label", left=1, right="ratio", height=0.7, source=src, color="color")
        fig.add_layout(
            bk.models.Whisker(
                source=src, base="label", lower="low", upper="high", dimension="width"
            )
        )
    fig.add_layout(bk.models.Span(location=1, dimension="height", line_color="black", line_width=2))
    return fig


def _time_figures(bk, rows: list[dict]):
    acro = [r for r in rows if r.get("system") == "acrobat" and not r.get("disabled")]
    labels = [f"{r['model']}/{r['size']}/b{r['batch']}/{r['policy']}" for r in acro] or ["-"]
    cols = {
        "label": labels,
        **{k: [r.get(f"{k}_ms", 0.0) for r in acro] for k in ("gen", "sched", "exe", "total")},
        "q1": [quartile(r, "q1") for r in acro],
        "q3": [quartile(r, "q3") for r in acro],
        "launches": [r.get("launches", 0) for r in acro],
        "lb": [r.get("lower_bound", 0) for r in acro],
    }
    src = bk.models.ColumnDataSource(cols if acro else {k: [] for k in cols})
    h = max(300, 18 * len(labels))
    times = bk.plotting.figure(
        y_range=labels,
        height=h,
        width=WIDTH,
        title="time per batch (ms): host (gen, sched) vs execution; whisker: total's IQR",
        tools="hover,save",
        tooltips="@label: total @total (@q1..@q3), gen @gen, sched @sched, exe @exe ms",
    )
    times.hbar_stack(
        ["gen", "sched", "exe"],
        y="label",
        height=0.8,
        source=src,
        color=["#e6550d", "#fdae6b", "#3182bd"],
        legend_label=["gen", "sched", "exe"],
    )
    times.add_layout(
        bk.models.Whisker(source=src, base="label", lower="q1", upper="q3", dimension="width")
    )
    launches = bk.plotting.figure(
        y_range=labels,
        height=h,
        width=WIDTH,
        title="launches vs lower bound (diamond)",
        tools="hover,save",
        tooltips="@label: @launches launches (lower bound @lb)",
    )
    launches.hbar(y="label", right="launches", height=0.8, source=src, color="#756bb1")
    launches.scatter(x="lb", y="label", source=src, color="black", size=8, marker="diamond")
    return times, launches


def roofline_points(rows: list[dict]) -> list[dict]:
    """Each timed row with FLOPs and compulsory bytes: its arithmetic intensity
    (FLOP/byte) and achieved GFLOP/s (median, and at its IQR's ends)."""
    out = []
    for r in rows:
        if r.get("flops") and r.get("min_bytes") and r.get("total_ms") and not r.get("disabled"):
            rate = r["flops"] / 1e6
            name = r["system"] if r["system"] != "acrobat" else f"acrobat/{r['policy']}"
            out.append(
                dict(
                    label=f"{r['model']}/{r['size']}/b{r['batch']} {name}",
                    intensity=r["flops"] / r["min_bytes"],
                    gflops=rate / r["total_ms"],
                    low=rate / quartile(r, "q3"),
                    high=rate / quartile(r, "q1"),
                )
            )
    return out


def _roofline_figure(bk, rows: list[dict]):
    peak, bw = limits(rows)
    points = roofline_points(rows)
    fig = bk.plotting.figure(
        x_axis_type="log",
        y_axis_type="log",
        height=450,
        width=WIDTH,
        title="roofline: achieved GFLOP/s vs arithmetic intensity (FLOP per compulsory byte)",
        x_axis_label="FLOP / byte",
        y_axis_label="GFLOP/s",
        tools="hover,save,pan,wheel_zoom,reset",
        tooltips="@label: @gflops{0.00} GFLOP/s at @intensity{0.00} FLOP/byte",
    )
    if points:
        src = bk.models.ColumnDataSource({k: [p[k] for p in points] for k in points[0]})
        fig.scatter(x="intensity", y="gflops", source=src, size=7, color="#3182bd")
        fig.segment(
            x0="intensity", x1="intensity", y0="low", y1="high", source=src, color="#3182bd"
        )
        xs = [p["intensity"] for p in points]
        lo, hi = min(xs) / 4, max(xs) * 4
        if peak:
            fig.line(
                [lo, hi],
                [peak, peak],
                color="black",
                legend_label=f"single SGEMM {peak:.0f} GFLOP/s",
            )
        if bw:
            top = peak / bw if peak else hi
            fig.line(
                [lo, min(hi, top)],
                [bw * lo, bw * min(hi, top)],
                color="#de2d26",
                legend_label=f"copy {bw:.1f} GB/s x intensity",
            )
    return fig


def html(rows: list[dict]) -> str:
    """The self-contained page (Bokeh's JavaScript inline)."""
    bk = _bokeh()
    times, launches = _time_figures(bk, rows)
    page = bk.layouts.column(_speedup_figure(bk, rows), times, launches, _roofline_figure(bk, rows))
    return bk.embed.file_html(page, bk.resources.INLINE, "acrobat benchmark report")
