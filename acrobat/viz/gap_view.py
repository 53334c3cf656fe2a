"""Why a schedule launches more batches than the lower bound: ``acrobat.gap_report`` as HTML.

The lower bound of a run is, per kernel, the most nodes of that kernel on one dependency path (no
schedule can batch two of them together), summed over kernels and run passes. A kernel launched
more often than its bound had nodes that could have shared a batch but ran apart (their inputs
were ready at different times, or the policy cut the batch); the table lists the kernels
furthest above their bound first, with their launches under ``acrobat`` and both DyNet policies
(scheduled on the same recorded DFGs) and the source lines their ops come from. Every string
(kernel and function names, source text) is escaped.
"""

from __future__ import annotations

import html

POLICIES = ("acrobat", "dynet-depth", "dynet-agenda")
MAX_ROWS = 30  # kernels listed; the rest are summed in one line
GAP_CSS = """
table.gap-table { border-collapse: collapse; font-size: 12px; }
table.gap-table th, table.gap-table td { padding: 2px 8px; border-bottom: 1px solid #d0d7de; }
table.gap-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.gap-table code { white-space: pre; }
"""


def above_bound(kernel) -> int:
    """Launches of ``kernel`` (an ``acrobat.KernelGap``) under ``acrobat`` beyond its bound."""
    return max(0, kernel.launches["acrobat"] - kernel.lower_bound)


def gap_html(report) -> str:
    """A headline (launches against the bound, and against DyNet) and one row per kernel,
    the kernels furthest above their bound first (an ``acrobat.GapReport``)."""
    la, bound = report.launches, report.lower_bound
    above = la["acrobat"] - bound
    head = (
        f"<p class='gap-headline'><b>acrobat launches {la['acrobat']} batches for a lower bound "
        f"of {bound}: {above} above it</b> ({report.instances} instance(s), "
        f"{report.passes} run pass(es)); on the same DFGs dynet-depth launches "
        f"{la['dynet-depth']} and dynet-agenda {la['dynet-agenda']}.</p>"
    )
    why = (
        "<p>A kernel's bound is the most of its nodes on one dependency path: no schedule can "
        "put two of them in one batch. Launches above it are nodes that could have shared a "
        "batch but ran apart, because their inputs were ready at different depths or the "
        "schedule split them.</p>"
    )
    kernels = sorted(report.kernels, key=lambda k: (-above_bound(k), k.kernel))
    cols = "".join(f"<th>{p}</th>" for p in POLICIES)
    rows = [
        f"<tr><th>kernel</th><th>nodes</th>{cols}<th>bound</th><th>above bound</th>"
        "<th>source</th></tr>"
    ]
    for k in kernels[:MAX_ROWS]:
        launches = "".join(f"<td class='num'>{k.launches[p]}</td>" for p in POLICIES)
        rows.append(
            f"<tr><td>{html.escape(k.kernel)}</td><td class='num'>{k.nodes}</td>{launches}"
            f"<td class='num'>{k.lower_bound}</td><td class='num'>{above_bound(k) or ''}</td>"
            f"<td>{_where(k, report.source_file)}</td></tr>"
        )
    rest = kernels[MAX_ROWS:]
    if rest:
        extra = sum(above_bound(k) for k in rest)
        rows.append(f"<tr><td colspan='8'>{len(rest)} more kernel(s), {extra} above</td></tr>")
    return f"{head}{why}<table class='gap-table'>{''.join(rows)}</table>"


def _where(kernel, source_file: str) -> str:
    """The calling functions, then each source line with its text."""
    fns = html.escape(", ".join(kernel.functions))
    lines = [
        f"{html.escape(source_file)}:{n}: <code>{html.escape(text.strip())}</code>"
        if text
        else f"line {n}"
        for n, text in kernel.lines
    ]
    return "<br>".join([fns, *lines] if fns else lines)
