"""Taint view model: every binding of the program at one pipeline stage coloured by class.

``parameter`` values are the same for every instance (weights and constants only),
``instance`` values vary with the instance's structure, and ``tensor-dependent`` values with
tensor contents read on the host, by data or by which branch ran (control flow). Weights
(``$name``) are shown as ``parameter``. Variables are scoped per function, as the IR is.

The stages (:func:`taint_stages`): the compiled program, from ``TaintComputed`` events (one per
host function, with fibers and tensor-dependent branches), and the earlier stages the compile
trace holds ``StageTaint`` events of (the parsed program; the program before fusion, where
every op is still in a host function, so every value is classified: the default,
:func:`default_stage`). Each stage's IR text is the ``PassApplied`` text at that point.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

from acrobat.trace import PassApplied, StageTaint, TaintComputed, Trace

TAINT_CLASSES = ("parameter", "instance", "tensor-dependent")
TAINT_COLORS = {"parameter": "#1a7f37", "instance": "#0550ae", "tensor-dependent": "#cf222e"}
TAINT_BACKGROUNDS = {"parameter": "#dafbe1", "instance": "#ddf4ff", "tensor-dependent": "#ffebe9"}
_WHAT = {
    "parameter": "the same for every instance: weights and constants only (computed once)",
    "instance": "varies with the instance's structure, known before any kernel runs",
    "tensor-dependent": "varies with tensor values read on the host (item, argmax), by data or "
    "by which branch ran: known only after kernels ran (a branch on one read here is a fiber)",
}
_HEADER = re.compile(r"^(?:def|kernel) @(\w+)")
_WEIGHT = re.compile(r"\$(\w+)")
FUSION_PASS = "FuseOps"
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


@dataclass(frozen=True)
class TaintStage:
    """One pipeline stage with taint classes: its stage number (0: parsed, k: after the k-th
    pass), a label for the picker, the IR text, and each host function's variable classes."""

    index: int
    label: str
    text: str
    classes: dict[str, dict[str, str]]
    compiled: bool


def taint_stages(trace: Trace) -> list[TaintStage]:
    """Every stage the trace has taint classes of, in pipeline order; the compiled program
    (``TaintComputed``) last. Empty when the trace has neither."""
    passes = trace.of(PassApplied)
    staged: dict[int, dict[str, dict[str, str]]] = {}
    for event in trace.of(StageTaint):
        if 0 <= event.stage <= len(passes):
            staged.setdefault(event.stage, {})[event.function] = dict(event.classes)
    stages = []
    for k in sorted(staged):
        if k == len(passes) and trace.of(TaintComputed):
            continue  # the compiled program: TaintComputed's, below
        text = passes[0].before if k == 0 and passes else passes[k - 1].after if k else ""
        name = "parsed" if k == 0 else passes[k - 1].name
        note = " (before fusion)" if k < len(passes) and passes[k].name == FUSION_PASS else ""
        stages.append(TaintStage(k, f"{k} · {name}{note}", text, staged[k], False))
    final = {event.function: dict(event.classes) for event in trace.of(TaintComputed)}
    if final:
        n = len(passes)
        name = passes[-1].name if passes else "compiled"
        label = f"{n} · {name} (compiled)" if passes else "compiled program"
        stages.append(TaintStage(n, label, final_ir(trace), final, True))
    return stages


def default_stage(stages: list[TaintStage]) -> int:
    """The position in ``stages`` of the most informative one: the program before fusion
    (every op still in a host function, so every value is classified; after fusion the
    values inside kernels are not), else the compiled program."""
    for position, stage in enumerate(stages):
        if stage.label.endswith("(before fusion)"):
            return position
    return len(stages) - 1


def _classes_of(trace: Trace, stage: TaintStage | None) -> dict[str, dict[str, str]]:
    if stage is not None:
        return stage.classes
    return {event.function: event.classes for event in trace.of(TaintComputed)}


def taint_rows(trace: Trace, stage: TaintStage | None = None) -> list[TaintRow]:
    """Every (function, variable, class) of ``stage`` (default: the compiled program)."""
    return [
        TaintRow(function, variable, taint)
        for function, classes in _classes_of(trace, stage).items()
        for variable, taint in classes.items()
    ]


def function_taints(trace: Trace, stage: TaintStage | None = None) -> list[FunctionTaint]:
    """Per function: fiber or not, tensor-dependent branches (both known for the compiled
    program only; an earlier stage shows no fiber and no branches), counts per class."""
    computed = {event.function: event for event in trace.of(TaintComputed)}
    compiled = stage is None or stage.compiled
    out = []
    for function, classes in _classes_of(trace, stage).items():
        counts = Counter(classes.values())
        event = computed.get(function) if compiled else None
        out.append(
            FunctionTaint(
                function,
                bool(event.fiber) if event else False,
                tuple(event.tensor_branches) if event else (),
                {cls: counts.get(cls, 0) for cls in TAINT_CLASSES},
            )
        )
    return out


def final_ir(trace: Trace) -> str:
    """The IR after the last pass (what the taint analysis saw), or "" without passes."""
    passes = trace.of(PassApplied)
    return passes[-1].after if passes else ""


def taint_html(trace: Trace, ir_text: str | None = None, stage: TaintStage | None = None) -> str:
    """The IR of ``stage`` (default: the compiled program) with every ``%var`` of an analysed
    function and every ``$weight`` coloured.

    Each coloured name carries its class as a ``title`` (hover) and a ``taint-<class>`` CSS
    class; everything else is HTML-escaped unchanged."""
    text = ir_text if ir_text is not None else stage.text if stage else final_ir(trace)
    classes = _classes_of(trace, stage)
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
        taint = html.escape(taint)
        out.append(
            f'<span class="taint-{taint}" title="{html.escape(name)}: {taint}">{token}</span>'
        )
        pos = match.end()
    out.append(html.escape(line[pos:]))
    return "".join(out)


def taint_legend_html(trace: Trace, stage: TaintStage | None = None) -> str:
    """A legend: one swatch per class with its meaning and how many variables have it (and,
    for ``parameter``, how many weights the program reads: they are parameters too)."""
    counts = Counter(row.taint for row in taint_rows(trace, stage))
    text = stage.text if stage is not None else final_ir(trace)
    weights = len(set(_WEIGHT.findall(text)))
    items = ""
    for cls in TAINT_CLASSES:
        extra = f" + {weights} weight{'s' if weights != 1 else ''}" if cls == "parameter" else ""
        items += (
            f'<li><span class="taint-{cls}">&nbsp;{cls}&nbsp;</span> '
            f"<b>{counts.get(cls, 0)}</b>{extra} — {html.escape(_WHAT[cls])}</li>"
        )
    return f'<ul class="taint-legend">{items}</ul>'


def taint_table_html(trace: Trace, stage: TaintStage | None = None) -> str:
    """Per function: fiber or not, the branch values that depend on tensors, counts per class
    (fiber and branches are the compiled program's: "—" for an earlier stage)."""
    compiled = stage is None or stage.compiled
    head = "<tr><th>function</th><th>fiber</th><th>tensor-dependent branches</th>"
    head += "".join(f'<th><span class="taint-{c}">{c}</span></th>' for c in TAINT_CLASSES)
    head += "</tr>"
    body = ""
    for fn in function_taints(trace, stage):
        branches = ", ".join(f"%{name}" for name in fn.tensor_branches) or "—"
        fiber = ("yes" if fn.fiber else "no") if compiled else "—"
        body += f"<tr><td><code>@{html.escape(fn.function)}</code></td>"
        body += f"<td>{fiber}</td><td><code>{html.escape(branches)}</code>"
        body += "</td>" + "".join(f"<td class='num'>{fn.counts[c]}</td>" for c in TAINT_CLASSES)
        body += "</tr>"
    return f'<table class="acrobat-table taint-table">{head}{body}</table>'


def taint_variables_html(trace: Trace, stage: TaintStage | None = None) -> str:
    """Every analysed variable of ``stage``: function, name and class (one row each)."""
    head = "<tr><th>function</th><th>variable</th><th>class</th></tr>"
    body = "".join(
        f"<tr><td><code>@{html.escape(row.function)}</code></td>"
        f"<td><code>%{html.escape(row.variable)}</code></td>"
        f'<td><span class="taint-{html.escape(row.taint)}">{html.escape(row.taint)}</span></td></tr>'
        for row in taint_rows(trace, stage)
    )
    return f'<table class="acrobat-table taint-variables">{head}{body}</table>'
