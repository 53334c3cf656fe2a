"""What a selected batch or DFG node is: kernel, size, depth, instances, source lines, types.

Read from a run's trace only: ``BatchFormed`` (the batches in launch order: a batch's run-wide
number is its position, the number ``NodeRecorded.batch`` gives), ``NodeRecorded`` (which nodes,
instances, phases and depths a batch ran) and ``KernelMapped`` (the source lines, calling
functions, ops and signature of its kernel, mapped once at compile time). The explorer links
its schedule and DFG views through these: a click on a bar selects a batch, the DFG view outlines
its nodes and a details pane shows :func:`batch_details_html`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from acrobat.trace import LAST_DEPTH, BatchFormed, KernelMapped, NodeRecorded, Trace


def depth_text(depth: int) -> str:
    """A depth as the views print it: the phase's last level (where a kernel whose result
    is only read on the host records, :data:`~acrobat.trace.LAST_DEPTH`) reads "last"."""
    return "last" if depth == LAST_DEPTH else str(depth)


@dataclass(frozen=True)
class Origin:
    """Where a kernel comes from: ``lines`` are ``(number, text)`` (text "" without source)."""

    file: str = ""
    lines: tuple[tuple[int, str], ...] = ()
    functions: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchDetails:
    """One batch of a run: ``batch`` is its run-wide number (0-based launch position)."""

    batch: int
    kernel: str
    size: int
    level: int
    run_pass: int
    policy: str
    phases: tuple[int, ...]
    depths: tuple[int, ...]
    instances: tuple[int, ...]
    nodes: tuple[int, ...]
    origin: Origin


@dataclass(frozen=True)
class NodeDetails:
    """One DFG node of a run."""

    node: int
    kernel: str
    instance: int
    phase: int
    depth: int
    batch: int
    inputs: tuple[int, ...]
    origin: Origin


def kernel_origin(trace: Trace, kernel: str, source: str = "") -> Origin:
    """The ``KernelMapped`` facts of ``kernel`` in ``trace`` (empty if the trace predates
    them), quoting the lines from ``source`` when it is given."""
    mapped = next((e for e in trace.of(KernelMapped) if e.kernel == kernel), None)
    if mapped is None:
        return Origin()
    text = source.splitlines()
    lines = tuple((n, text[n - 1].strip() if 0 < n <= len(text) else "") for n in mapped.lines)
    return Origin(mapped.file, lines, mapped.functions, mapped.ops, mapped.params, mapped.outputs)


def batch_details(trace: Trace, batch: int, source: str = "") -> BatchDetails | None:
    """The ``batch``-th batch of ``trace`` (run-wide, from 0), or None when there is none."""
    formed = trace.of(BatchFormed)
    if not 0 <= batch < len(formed):
        return None
    b = formed[batch]
    nodes = [r for r in trace.of(NodeRecorded) if r.batch == batch]
    return BatchDetails(
        batch,
        b.kernel,
        b.size,
        b.level,
        b.run_pass,
        b.policy,
        tuple(sorted({r.phase for r in nodes})),
        tuple(sorted({r.depth for r in nodes})),
        tuple(sorted({r.instance for r in nodes})),
        tuple(r.node for r in nodes),
        kernel_origin(trace, b.kernel, source),
    )


def node_details(trace: Trace, node: int, source: str = "") -> NodeDetails | None:
    """DFG node ``node`` of ``trace``, or None when there is none."""
    record = next((r for r in trace.of(NodeRecorded) if r.node == node), None)
    if record is None:
        return None
    return NodeDetails(
        record.node,
        record.kernel,
        record.instance,
        record.phase,
        record.depth,
        record.batch,
        record.inputs,
        kernel_origin(trace, record.kernel, source),
    )


def _span_text(values: tuple[int, ...], text=str) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return text(values[0])
    return f"{text(values[0])}–{text(values[-1])}"


def _list_text(values: tuple[int, ...], limit: int = 64) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f", … ({len(values)} in all)" if len(values) > limit else "")


def _origin_rows(origin: Origin) -> list[tuple[str, str]]:
    if not origin.lines and not origin.ops:
        return [("source", "not in this trace (it has no KernelMapped events)")]
    where = f"{html.escape(origin.file)}: " if origin.file else ""
    lines = "<br>".join(
        f"line {n}" + (f": <code>{html.escape(text)}</code>" if text else "")
        for n, text in origin.lines
    )
    return [
        ("source lines", where + (lines or "—")),
        ("called from", html.escape(", ".join(origin.functions) or "—")),
        ("IR ops", html.escape(" → ".join(origin.ops) or "—")),
        ("arguments", html.escape("; ".join(origin.params) or "—")),
        ("results", html.escape(", ".join(origin.outputs) or "—")),
    ]


def _table(title: str, rows: list[tuple[str, str]], attrs: str) -> str:
    body = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<div class="selection-details" {attrs}><b>{title}</b><table>{body}</table></div>'


def batch_details_html(details: BatchDetails, side: str = "") -> str:
    """The details pane of a selected batch (kernel, size, level and depth, instances, source
    lines); its ``data-batch`` and ``data-instances`` attributes name the batch and instances."""
    run = f"run {side} · " if side else ""
    rows = [
        ("kernel", html.escape(details.kernel)),
        ("batch size", f"{details.size} node(s)"),
        (
            "level",
            f"{details.level} (phase {_span_text(details.phases)}, "
            f"depth {_span_text(details.depths, depth_text)}; run pass {details.run_pass})",
        ),
        ("instances", f"{len(details.instances)}: {_list_text(details.instances)}"),
        ("DFG nodes", _list_text(details.nodes)),
        *_origin_rows(details.origin),
    ]
    attrs = (
        f'data-batch="{details.batch}" '
        f'data-instances="{",".join(str(i) for i in details.instances)}"'
    )
    title = (
        f"{run}{html.escape(details.policy)} · batch {details.batch} "
        f"(launch {details.batch + 1} of the run)"
    )
    return _table(title, rows, attrs)


def node_details_html(details: NodeDetails, side: str = "") -> str:
    """The details pane of a selected DFG node (kernel, source line, depth, batch, types)."""
    run = f"run {side} · " if side else ""
    rows = [
        ("kernel", html.escape(details.kernel)),
        ("instance", str(details.instance)),
        ("depth", f"{depth_text(details.depth)} (phase {details.phase})"),
        ("batch", "—" if details.batch < 0 else f"{details.batch} (launch {details.batch + 1})"),
        ("inputs", _list_text(details.inputs) or "—"),
        *_origin_rows(details.origin),
    ]
    attrs = f'data-node="{details.node}" data-batch="{details.batch}"'
    return _table(f"{run}DFG node #{details.node}", rows, attrs)


DETAILS_CSS = """
.selection-details { font-size: 12px; }
.selection-details table { border-collapse: collapse; margin-top: 4px; }
.selection-details th { text-align: left; vertical-align: top; padding: 2px 10px 2px 0;
  color: #57606a; font-weight: 600; white-space: nowrap; }
.selection-details td { padding: 2px 0; }
.selection-details code { font-size: 11px; background: #f6f8fa; padding: 0 3px; }
"""
