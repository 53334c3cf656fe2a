"""Turn benchmark rows into CSV, a markdown table and a self-contained HTML page."""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

from acrobat.bench.results import read_results
from acrobat.errors import MissingExtraError

LIMIT_SYSTEMS = ("sgemm", "stream")
"""Rows of the machine's limits (``acrobat.bench.harness``: ``sgemm_limit``,
``stream_limit``), not of a configuration."""

COLUMNS = (
    "model",
    "size",
    "batch",
    "system",
    "policy",
    "disabled",
    "total_ms",
    "total_q1_ms",
    "total_q3_ms",
    "gen_ms",
    "gen_q1_ms",
    "gen_q3_ms",
    "sched_ms",
    "sched_q1_ms",
    "sched_q3_ms",
    "exe_ms",
    "exe_q1_ms",
    "exe_q3_ms",
    "launches",
    "lower_bound",
    "mean_batch",
    "gflops",
    "status",
)


def load_rows(paths: list[Path]) -> list[dict]:
    """The rows of results files, one after the other (their metadata rows left out)."""
    return [row for p in paths for row in read_results(p)[1]]


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return "" if v is None else str(v)


def markdown(rows: list[dict]) -> str:
    """One table: per (model, size, batch), each system's time and its speedup."""
    lines = [
        "| model | size | batch | system | policy | total ms | vs acrobat | launches (LB) | "
        "host share | GFLOP/s |",
        "|" + "---|" * 10,
    ]
    groups = defaultdict(list)
    for r in rows:
        if r.get("system") not in LIMIT_SYSTEMS:
            groups[(r.get("model"), r.get("size"), r.get("batch"))].append(r)
    for key, rs in groups.items():
        base = next(
            (
                r
                for r in rs
                if r.get("system") == "acrobat"
                and r.get("policy") == "acrobat"
                and not r.get("disabled")
            ),
            None,
        )
        for r in rs:
            t = r.get("total_ms")
            ratio = (t / base["total_ms"]) if base and t else None
            lb = f"{r['launches']} ({r['lower_bound']})" if "launches" in r else ""
            host = f"{100 * r['host_share']:.0f}%" if "host_share" in r else ""
            name = r["system"] + (f" -{r['disabled']}" if r.get("disabled") else "")
            lines.append(
                f"| {key[0]} | {key[1]} | {key[2]} | {name} | {r.get('policy', '')} | "
                f"{_fmt(t) if t else r.get('status', '')} | {_fmt(ratio) + 'x' if ratio else ''} | "
                f"{lb} | {host} | {_fmt(r.get('gflops', ''))} |"
            )
    for r in rows:
        if r.get("system") == "sgemm":
            lines.append(
                f"\nSingle SGEMM {r['size']}: {r['gflops']:.0f} GFLOP/s (the physical limit)."
            )
        elif r.get("system") == "stream":
            lines.append(f"\nMemory, {r['size']}: {r['gbps']:.1f} GB/s (one thread's copy).")
    return "\n".join(lines) + "\n"


def _cell(r: dict | None) -> str:
    """``median (q1-q3)`` of a row's total time, or its status."""
    if r is None:
        return "–"
    t = r.get("total_ms")
    if not t:
        return str(r.get("status", "–"))
    q1, q3 = r.get("total_q1_ms"), r.get("total_q3_ms")
    return f"{_fmt(t)} ({_fmt(q1)}–{_fmt(q3)})" if q1 is not None and q3 is not None else _fmt(t)


def _by_config(rows: list[dict]) -> dict[tuple, dict[str, dict]]:
    """(model, size, batch) -> column name -> row: acrobat's rows as ``policy:<policy>``
    (acrobat's ``dynet-depth`` policy is not DyNet's ``dynet-depth`` system: the names
    must not meet), the others by system, and DyNet's fastest strategy also as
    ``dynet-best``."""
    out: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        if r.get("system") in (None, *LIMIT_SYSTEMS) or r.get("disabled"):
            continue
        cols = out[(r.get("model"), r.get("size"), r.get("batch"))]
        name = f"policy:{r['policy']}" if r["system"] == "acrobat" else r["system"]
        cols[name] = r
        if r["system"].startswith("dynet-") and r.get("total_ms"):
            best = cols.get("dynet-best")
            if best is None or r["total_ms"] < best["total_ms"]:
                cols["dynet-best"] = r
    return out


def summary(rows: list[dict]) -> str:
    """The README table: per (model, size, batch) the medians with their interquartile
    ranges of acrobat (and which strategy ``auto`` ran), the other policies, the
    per-instance and hand-batched NumPy baselines and the peers; then the issue-14
    targets checked on these rows (:func:`targets`)."""
    head = (
        "| model | size | batch | acrobat ms (IQR) | strategy | launches (LB) | host share "
        "| dynet-depth policy | eager policy | per-instance NumPy | hand-batched NumPy "
        "| PyTorch eager | DyNet 2.1.2 best |"
    )
    lines = [head, "|" + "---|" * 13]
    for (m, size, b), cols in _by_config(rows).items():
        a = cols.get("policy:acrobat")
        if a is None:
            continue
        best = cols.get("dynet-best")
        dyn = f"{_cell(best)} {best['policy']}" if best else "–"
        # a direct run has no kernel timer: its host share is not measured
        host = "–" if a.get("strategy") == "direct" else f"{100 * a.get('host_share', 0):.0f}%"
        lines.append(
            f"| {m} | {size} | {b} | {_cell(a)} | {a.get('strategy_runs', a.get('strategy', ''))} | "
            f"{a.get('launches', '')} ({a.get('lower_bound', '')}) | "
            f"{host} | {_cell(cols.get('policy:dynet-depth'))} | "
            f"{_cell(cols.get('policy:eager'))} | {_cell(cols.get('eager-numpy'))} | "
            f"{_cell(cols.get('hand-batched'))} | {_cell(cols.get('torch-eager'))} | {dyn} |"
        )
    return "\n".join(lines) + "\n\n" + targets(rows) + "\n" + roofline_table(rows)


def limits(rows: list[dict]) -> tuple[float | None, float | None]:
    """The grid's measured limits: (single SGEMM GFLOP/s, copy GB/s), None where absent."""
    peak = next((r["gflops"] for r in rows if r.get("system") == "sgemm" and r.get("gflops")), None)
    bw = next((r["gbps"] for r in rows if r.get("system") == "stream" and r.get("gbps")), None)
    return peak, bw


def roofline(row: dict, peak: float | None, bw: float | None) -> dict | None:
    """Where a configuration's arithmetic puts its floor on this machine: ``compute_ms``
    (its kernels' FLOPs at the single-SGEMM rate), ``memory_ms`` (their compulsory traffic,
    ``min_bytes``, at the copy bandwidth: cold caches), ``bound_ms`` the larger, ``bound``
    which, and ``of_bound`` = bound / the row's median time (1.0: at the roof). None
    without FLOPs or limits."""
    flops, t = row.get("flops"), row.get("total_ms")
    if not flops or not t or not peak:
        return None
    compute = flops / (peak * 1e6)
    memory = row["min_bytes"] / (bw * 1e6) if bw and row.get("min_bytes") else 0.0
    bound = max(compute, memory)
    return {
        "compute_ms": compute,
        "memory_ms": memory,
        "bound_ms": bound,
        "bound": "compute" if compute >= memory else "memory",
        "of_bound": bound / t,
    }


def roofline_table(rows: list[dict]) -> str:
    """Per (model, size, batch): the acrobat row's FLOPs and compulsory bytes, the floor they
    set on this machine, and how near acrobat and the faster of the eager policy and the
    per-instance loop come to it (the same arithmetic: the same instances and math)."""
    peak, bw = limits(rows)
    if peak is None:
        return ""
    head = (
        f"Roofline (single SGEMM {peak:.0f} GFLOP/s"
        + (f", copy {bw:.1f} GB/s" if bw else "")
        + "; the floor is the larger of the FLOPs at that rate and the compulsory bytes, every "
        "weight once and every node's tensors once, at that bandwidth):\n\n"
        "| model | size | batch | GFLOP | compulsory MB | compute floor ms | memory floor ms "
        "| acrobat ms | acrobat at | best of eager / per-instance at |\n" + "|" + "---|" * 10
    )
    lines = [head]
    for (m, size, b), cols in _by_config(rows).items():
        a = cols.get("policy:acrobat")
        rl = roofline(a, peak, bw) if a is not None else None
        if rl is None:
            continue
        others = [
            cols[c]["total_ms"]
            for c in ("policy:eager", "eager-numpy")
            if cols.get(c, {}).get("total_ms")
        ]
        other = f"{100 * rl['bound_ms'] / min(others):.0f}%" if others else "–"
        mb = f"{a['min_bytes'] / 1e6:.3g}" if a.get("min_bytes") else "–"
        mem = _fmt(rl["memory_ms"]) if bw and a.get("min_bytes") else "–"
        lines.append(
            f"| {m} | {size} | {b} | {a['flops'] / 1e9:.3g} | {mb} | "
            f"{_fmt(rl['compute_ms'])} | {mem} | {_fmt(a['total_ms'])} | "
            f"{100 * rl['of_bound']:.0f}% | {other} |"
        )
    return "\n".join(lines) + "\n"


def quartile(r: dict, which: str) -> float:
    """A row's total-time quartile (``q1``/``q3``), its median where it has none."""
    return r.get(f"total_{which}_ms") or r["total_ms"]


def meets(slow: dict, fast: dict, factor: float) -> str:
    """The check ``slow``'s time <= ``factor`` x ``fast``'s: ``met`` on the medians;
    ``MISSED`` only when ``slow``'s IQR lies wholly above ``factor`` x ``fast``'s (the spreads
    apart); else ``within noise`` (the medians miss, the spreads overlap)."""
    if slow["total_ms"] <= factor * fast["total_ms"]:
        return "met"
    if quartile(slow, "q1") > factor * quartile(fast, "q3"):
        return "MISSED"
    return "within noise"


def targets(rows: list[dict]) -> str:
    """Issue 14's done-when checks on one grid run, one line per check that applies:
    acrobat <= 1.05x min(eager policy, per-instance NumPy); BiRNN: DyNet best / acrobat
    >= 1.0; TreeLSTM: >= 2.0 and, at batch 64, acrobat <= hand-batched. A check is MISSED
    only when the interquartile ranges are apart (:func:`meets`)."""
    out = []
    for (m, size, b), cols in _by_config(rows).items():
        a = cols.get("policy:acrobat")
        if a is None or not a.get("total_ms"):
            continue
        t = a["total_ms"]
        where = f"{m} {size} b{b}"
        base = [cols[c] for c in ("policy:eager", "eager-numpy") if cols.get(c, {}).get("total_ms")]
        if base:
            fast = min(base, key=lambda r: r["total_ms"])
            r = t / fast["total_ms"]
            line = (
                f"- {where}: acrobat / min(eager policy, per-instance) = {r:.2f} "
                f"({meets(a, fast, 1.05)}, target <= 1.05)"
            )
            rl = roofline(a, *limits(rows)) if r > 1.05 else None
            if rl is not None:  # why: how near both come to the machine's floor
                line += (
                    f"; roofline: {a['flops'] / 1e9:.3g} GFLOP, {rl['bound']}-bound, floor "
                    f"{_fmt(rl['bound_ms'])} ms: acrobat at {100 * rl['of_bound']:.0f}% of it, "
                    f"the faster other at {100 * rl['bound_ms'] / fast['total_ms']:.0f}%"
                )
            out.append(line)
        best = cols.get("dynet-best")
        if best is not None and m in ("birnn", "treelstm"):
            need = 1.0 if m == "birnn" else 2.0
            out.append(
                f"- {where}: DyNet best ({best['policy']}) / acrobat = {best['total_ms'] / t:.2f} "
                f"({meets(a, best, 1 / need)}, target >= {need})"
            )
        hand = cols.get("hand-batched")
        if m == "treelstm" and b == 64 and hand and hand.get("total_ms"):
            out.append(
                f"- {where}: acrobat / hand-batched = {t / hand['total_ms']:.2f} "
                f"({meets(a, hand, 1.0)}, target <= 1.0)"
            )
    return "\n".join(out) + "\n"


def write_report(inputs: list[Path], out: Path) -> list[Path]:
    """CSV, markdown and (with the `viz` extra's Bokeh) HTML next to ``out``; the paths written."""
    rows = load_rows(inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    csv_path = out.with_suffix(".csv")
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    md_path = out.with_suffix(".md")
    md_path.write_text(markdown(rows))
    summary_path = out.with_name(out.name + "-summary.md")
    summary_path.write_text(summary(rows))
    from acrobat.bench.plots import html  # it reads this module's limits: imported when used

    try:
        page = html(rows)
    except MissingExtraError as e:
        print(f"no HTML report: {e}", file=sys.stderr)
        return [csv_path, md_path, summary_path]
    html_path = out.with_suffix(".html")
    html_path.write_text(page)
    return [csv_path, md_path, summary_path, html_path]
