"""Taint view model: every binding of the compiled program coloured by its taint class.

From ``TaintComputed`` events (one per host function) and the final IR text: ``parameter``
values depend on weights only, ``instance`` values on the instance's structure, and
``tensor-dependent`` values on tensor contents (they force a fiber and a run-time sync).
Weights (``$name``) are shown as ``parameter``. Variables are scoped per function, as the IR is.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

from acrobat.trace import PassApplied, TaintComputed, Trace

TAINT_CLASSES = ("parameter", "instance", "tensor-dependent")
TAINT_COLORS = {"parameter": "#1a7f37", "instance": "#0550ae", "tensor-dependent": "#cf222e"}
TAINT_BACKGROUNDS = {"parameter": "#dafbe1", "instance": "#ddf4ff", "tensor-dependent": "#ffebe9"}
_WHAT = {
    "parameter": "depends on weights only: computed once, shared by every instance",
    "instance": "depends on the instance's structure (control flow known before any tensor op)",
    "tensor-dependent": "depends on tensor values: control flow waits for kernels (fibers)",
}
_HEADER = re.compile(r"^(?:def|kernel) @(\w+)")
_NAME = re.compile(r"([%$])(\w+)")

TAINT_CSS = "".join(
    f".taint-{cls} {{ color: {TAINT_COLORS[cls]}; background: {TAINT_BACKGROUNDS[cls]};"
    " border-radius: 3px; font-weight: 600; }\n"
    for cls in TAINT_CLASSES
)


@dataclass(frozen=True)
class TaintRow:
    """One variable of one function and its taint class."""

    function: str
    variable: str
    taint: str


@dataclass(frozen=True)
class FunctionTaint:
    """One host function: whether it runs as a fiber, and the values its branches test."""

    function: str
    fiber: bool
    tensor_branches: tuple[str, ...]
    counts: dict[str, int]


def taint_rows(trace: Trace) -> list[TaintRow]:
    """Every (function, variable, class) in the compile trace, in the order computed."""
    return [
        TaintRow(event.function, variable, taint)
        for event in trace.of(TaintComputed)
        for variable, taint in event.classes.items()
    ]


def function_taints(trace: Trace) -> list[FunctionTaint]:
    """Per function: fiber or not, tensor-dependent branches, and counts per class."""
    out = []
    for event in trace.of(TaintComputed):
        counts = Counter(event.classes.values())
        out.append(
            FunctionTaint(
                event.function,
                bool(event.fiber),
                tuple(event.tensor_branches),
                {cls: counts.get(cls, 0) for cls in TAINT_CLASSES},
            )
        )
    return out


def final_ir(trace: Trace) -> str:
    """The IR after the last pass (what the taint analysis saw), or "" without passes."""
    passes = trace.of(PassApplied)
    return passes[-1].after if passes else ""


def taint_html(trace: Trace, ir_text: str | None = None) -> str:
    """The IR with every ``%var`` of an analysed function and every ``$weight`` coloured.

    Each coloured name carries its class as a ``title`` (hover) and a ``taint-<class>`` CSS
    class; everything else is HTML-escaped unchanged."""
    text = final_ir(trace) if ir_text is None else ir_text
    classes = {event.function: event.classes for event in trace.of(TaintComputed)}
    scope: dict = {}
    out = []
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line)
        if header:
            scope = classes.get(header.group(1), {})
        out.append(_colour_line(line, scope))
    return f'<pre class="acrobat-ir taint-ir"><code>{"".join(out)}</code></pre>'


def _colour_line(line: str, scope: dict) -> str:
    out, pos = [], 0
    for match in _NAME.finditer(line):
        sigil, name = match.groups()
        taint = "parameter" if sigil == "$" else scope.get(name)
        if taint is None:
            continue
        out.append(html.escape(line[pos : match.start()]))
        token = html.escape(match.group())
        out.append(f'<span class="taint-{taint}" title="{name}: {taint}">{token}</span>')
        pos = match.end()
    out.append(html.escape(line[pos:]))
    return "".join(out)


def taint_legend_html(trace: Trace) -> str:
    """A legend: one swatch per class with its meaning and how many variables have it."""
    counts = Counter(row.taint for row in taint_rows(trace))
    items = "".join(
        f'<li><span class="taint-{cls}">&nbsp;{cls}&nbsp;</span> '
        f"<b>{counts.get(cls, 0)}</b> — {html.escape(_WHAT[cls])}</li>"
        for cls in TAINT_CLASSES
    )
    return f'<ul class="taint-legend">{items}</ul>'


def taint_table_html(trace: Trace) -> str:
    """Per function: fiber or not, the branch values that depend on tensors, counts per class."""
    head = "<tr><th>function</th><th>fiber</th><th>tensor-dependent branches</th>"
    head += "".join(f'<th><span class="taint-{c}">{c}</span></th>' for c in TAINT_CLASSES)
    head += "</tr>"
    body = ""
    for fn in function_taints(trace):
        branches = ", ".join(f"%{name}" for name in fn.tensor_branches) or "—"
        body += f"<tr><td><code>@{html.escape(fn.function)}</code></td>"
        body += f"<td>{'yes' if fn.fiber else 'no'}</td><td><code>{html.escape(branches)}</code>"
        body += "</td>" + "".join(f"<td class='num'>{fn.counts[c]}</td>" for c in TAINT_CLASSES)
        body += "</tr>"
    return f'<table class="acrobat-table taint-table">{head}{body}</table>'


def taint_variables_html(trace: Trace) -> str:
    """Every analysed variable: function, name and class (one row each)."""
    head = "<tr><th>function</th><th>variable</th><th>class</th></tr>"
    body = "".join(
        f"<tr><td><code>@{html.escape(row.function)}</code></td>"
        f"<td><code>%{html.escape(row.variable)}</code></td>"
        f'<td><span class="taint-{row.taint}">{row.taint}</span></td></tr>'
        for row in taint_rows(trace)
    )
    return f'<table class="acrobat-table taint-variables">{head}{body}</table>'
