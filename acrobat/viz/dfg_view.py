"""DFG view model: one instance's dataflow graph from ``NodeRecorded`` events, as graphviz.

Nodes are coloured by depth (the level the scheduler saw) or by the batch that ran them. A graph
with more than ``fold_above`` nodes is folded, so hundreds of nodes never reach the browser: one
box per (phase, kernel, depth), labelled with how many nodes it stands for; if that is still too
many, one box per (phase, kernel). The SVG is rendered on the server by Graphviz ``dot``.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass

import graphviz
from bokeh.palettes import Category20, viridis

from acrobat.trace import LAST_DEPTH, NodeRecorded, Trace

FOLD_ABOVE = 150
COLOR_BY = ("depth", "batch")
MIXED = "#d0d7de"


@dataclass(frozen=True)
class DfgNode:
    """A drawn node: one DFG node, or a fold of ``count`` nodes sharing kernel and depth."""

    id: str
    label: str
    color: str
    count: int
    kernel: str
    depths: tuple[int, ...]
    batches: tuple[int, ...]


@dataclass(frozen=True)
class DfgModel:
    """What the DFG view draws for one instance."""

    instance: int
    color_by: str
    nodes: tuple[DfgNode, ...]
    edges: tuple[tuple[str, str, int], ...]
    folded: str  # "" (one box per node), "kernel+depth" or "kernel"
    total_nodes: int
    legend: tuple[tuple[str, str], ...]  # (label, colour)


def instances_in(trace: Trace) -> list[int]:
    """The instance numbers that have recorded nodes, ascending."""
    return sorted({event.instance for event in trace.of(NodeRecorded)})


def dfg_model(
    trace: Trace, instance: int = 0, color_by: str = "depth", fold_above: int = FOLD_ABOVE
) -> DfgModel:
    """The graph of ``instance``: nodes, de-duplicated edges, colours; folded when large."""
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {COLOR_BY}, not {color_by!r}")
    records = [event for event in trace.of(NodeRecorded) if event.instance == instance]
    key = _fold_key(records, fold_above)
    groups: dict[tuple, list[NodeRecorded]] = defaultdict(list)
    for record in records:
        groups[key(record)].append(record)
    colors, legend = _palette(records, color_by)
    ids = {group: f"g{n}" for n, group in enumerate(groups)}
    nodes = tuple(_node(ids[g], members, color_by, colors, key) for g, members in groups.items())
    owner = {record.node: ids[key(record)] for record in records}
    edge_counts: Counter = Counter()
    for record in records:
        for source in set(record.inputs):
            if source in owner:
                edge_counts[(owner[source], owner[record.node])] += 1
    edges = tuple((src, dst, count) for (src, dst), count in edge_counts.items())
    folded = {_by_node: "", _by_level: "kernel+depth", _by_kernel: "kernel"}[key]
    return DfgModel(instance, color_by, nodes, edges, folded, len(records), legend)


def _by_node(record: NodeRecorded) -> tuple:
    return (record.node,)


def _by_level(record: NodeRecorded) -> tuple:
    return (record.phase, record.kernel, record.depth)


def _by_kernel(record: NodeRecorded) -> tuple:
    return (record.phase, record.kernel)


def _fold_key(records: list[NodeRecorded], fold_above: int):
    if len(records) <= fold_above:
        return _by_node
    if len({_by_level(record) for record in records}) <= fold_above:
        return _by_level
    return _by_kernel


def _palette(records: list[NodeRecorded], color_by: str):
    values = sorted({getattr(record, color_by) for record in records})
    if color_by == "depth":
        shades = viridis(max(len(values), 3))[: len(values)] if values else []
        colors = dict(zip(values, shades))
    else:
        cycle = Category20[20]
        colors = {value: cycle[n % len(cycle)] for n, value in enumerate(values)}
    shown = values if len(values) <= 24 else values[:: max(1, len(values) // 24)]
    text = depth_text if color_by == "depth" else str
    return colors, tuple((f"{color_by} {text(value)}", colors[value]) for value in shown)


def _node(node_id, members, color_by, colors, key) -> DfgNode:
    first = members[0]
    depths = tuple(sorted({m.depth for m in members}))
    batches = tuple(sorted({m.batch for m in members}))
    shades = {colors[getattr(m, color_by)] for m in members}
    color = shades.pop() if len(shades) == 1 else MIXED
    if key is _by_node:
        label = f"{first.kernel}\n#{first.node} · d{depth_text(first.depth)} · b{first.batch}"
    else:
        label = f"{first.kernel} ×{len(members)}\nd{_span(depths)} · b{_span(batches)}"
    return DfgNode(node_id, label, color, len(members), first.kernel, depths, batches)


def depth_text(depth: int) -> str:
    """A depth as the views print it: the phase's last level (where a kernel whose result
    is only read on the host records, :data:`~acrobat.trace.LAST_DEPTH`) reads "last"."""
    return "last" if depth == LAST_DEPTH else str(depth)


def _span(values: tuple[int, ...]) -> str:
    first, last = depth_text(values[0]), depth_text(values[-1])
    return first if len(values) == 1 else f"{first}–{last}"


def layout_direction(model: DfgModel) -> str:
    """``"TB"`` (producers above consumers), or ``"LR"`` for a graph much wider than deep (many
    short chains), which top-to-bottom would shrink to an unreadable strip."""
    per_depth = Counter(node.depths[0] for node in model.nodes)
    widest = max(per_depth.values(), default=0)
    return "LR" if widest > 3 * max(len(per_depth), 1) and widest > 12 else "TB"


def dfg_graph(model: DfgModel) -> graphviz.Digraph:
    """The model as a graphviz ``Digraph`` (producers before consumers)."""
    graph = graphviz.Digraph(f"dfg{model.instance}")
    graph.attr(
        rankdir=layout_direction(model), bgcolor="transparent", nodesep="0.15", ranksep="0.3"
    )
    graph.attr("node", shape="box", style="rounded,filled", fontname="DejaVu Sans", fontsize="10")
    graph.attr("edge", color="#57606a", arrowsize="0.6")
    for node in model.nodes:
        font = "white" if _dark(node.color) else "black"
        width = str(1 + min(node.count, 200) ** 0.5 / 4) if node.count > 1 else "0.9"
        graph.node(node.id, node.label, fillcolor=node.color, fontcolor=font, penwidth=width)
    for src, dst, count in model.edges:
        graph.edge(src, dst, label=str(count) if count > 1 else "", fontsize="9")
    return graph


def dfg_svg(model: DfgModel) -> str:
    """The graph rendered to SVG text by Graphviz ``dot`` (on the server)."""
    if not model.nodes:
        return f"<p>instance {model.instance} recorded no nodes</p>"
    svg = dfg_graph(model).pipe(format="svg", encoding="utf-8")
    return svg[svg.index("<svg") :]  # drop the XML prolog and doctype: it is embedded in HTML


def dfg_legend_html(model: DfgModel) -> str:
    """Colour swatches of the legend, plus a note when the graph is folded."""
    items = "".join(
        f'<span class="swatch" style="background:{color}"></span>{html.escape(label)} '
        for label, color in model.legend
    )
    note = ""
    if model.folded:
        note = (
            f" — {model.total_nodes} nodes folded by {model.folded} into "
            f"{len(model.nodes)} boxes (×n: nodes in a box)"
        )
    return f'<div class="dfg-legend">{items}{html.escape(note)}</div>'


def _dark(color: str) -> bool:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 140
