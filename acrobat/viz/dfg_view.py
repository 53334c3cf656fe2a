"""DFG view model: one instance's (or every instance's) dataflow graph from ``NodeRecorded``.

Nodes are coloured by depth (the level the scheduler saw) or by the batch that ran them; every
label and tooltip also names the batch (``b3``), so batch identity never rests on colour alone. A
graph with more than ``fold_above`` nodes is folded: one box per (phase, kernel, depth), labelled
with how many nodes it stands for; if that is still too many, one box per (phase, kernel).

Graphviz ``dot`` only lays the graph out (``-Tplain``: positions, sizes, edge routes; with a
bounded network-simplex search, so a folded graph full of cycles lays out in a fraction of a
second); Bokeh draws it (:func:`dfg_figure`): pan, wheel and box zoom, hover, tap to select, and
labels that grow with the zoom (on a large graph, drawn once the view holds still). :func:`highlight_dfg` outlines a selected batch's nodes in place.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass

import graphviz
from bokeh.models import BoxZoomTool, ColumnDataSource, CustomJS, HoverTool, Range1d, TapTool
from bokeh.palettes import Category20, viridis
from bokeh.plotting import figure

from acrobat.trace import NodeRecorded, Trace
from acrobat.viz.selection import depth_text

FOLD_ABOVE = 400
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
    instances: tuple[int, ...] = ()
    members: tuple[int, ...] = ()  # the DFG node numbers the box stands for


@dataclass(frozen=True)
class DfgModel:
    """What the DFG view draws for one instance (``instance`` None: every instance)."""

    instance: int | None
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
    trace: Trace,
    instance: int | None = 0,
    color_by: str = "depth",
    fold_above: int = FOLD_ABOVE,
) -> DfgModel:
    """The graph of ``instance`` (None: of every instance, side by side): nodes, de-duplicated
    edges, colours; folded when large."""
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {COLOR_BY}, not {color_by!r}")
    records = [e for e in trace.of(NodeRecorded) if instance is None or e.instance == instance]
    key = _fold_key(records, fold_above)
    groups: dict[tuple, list[NodeRecorded]] = defaultdict(list)
    for record in records:
        groups[key(record)].append(record)
    colors, legend = _palette(records, color_by)
    ids = {group: f"g{n}" for n, group in enumerate(groups)}
    nodes = tuple(
        _node(ids[g], members, color_by, colors, key, instance is None)
        for g, members in groups.items()
    )
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


def _node(node_id, members, color_by, colors, key, every_instance: bool) -> DfgNode:
    first = members[0]
    depths = tuple(sorted({m.depth for m in members}))
    batches = tuple(sorted({m.batch for m in members}))
    instances = tuple(sorted({m.instance for m in members}))
    shades = {colors[getattr(m, color_by)] for m in members}
    color = shades.pop() if len(shades) == 1 else MIXED
    if key is _by_node:
        label = f"{first.kernel}\n#{first.node} · d{depth_text(first.depth)} · b{first.batch}"
        label += f" · i{first.instance}" if every_instance else ""
    else:
        label = f"{first.kernel} ×{len(members)}\nd{_span(depths)} · b{_span(batches)}"
    members_ids = tuple(m.node for m in members)
    return DfgNode(
        node_id, label, color, len(members), first.kernel, depths, batches, instances, members_ids
    )


def _span(values: tuple[int, ...]) -> str:
    first, last = depth_text(values[0]), depth_text(values[-1])
    return first if len(values) == 1 else f"{first}–{last}"


def layout_direction(model: DfgModel) -> str:
    """``"TB"`` (producers above consumers), or ``"LR"`` for a graph much wider than deep (many
    short chains), which top-to-bottom would shrink to an unreadable strip."""
    per_depth = Counter(node.depths[0] for node in model.nodes)
    widest = max(per_depth.values(), default=0)
    return "LR" if widest > 3 * max(len(per_depth), 1) and widest > 12 else "TB"


FONT_SIZE = 10  # points in the layout: one layout unit is one point
LAYOUT_LIMITS = {"nslimit": "2", "nslimit1": "2", "mclimit": "0.5"}
"""Bounds on dot's network-simplex and crossing-minimisation searches: a folded graph full of
cycles took 4 s without them (NestedRNN), well under a second with them."""


def dfg_graph(model: DfgModel, styled: bool = False) -> graphviz.Digraph:
    """The model as a graphviz ``Digraph`` (producers before consumers): for the layout, or
    ``styled`` (fill colours, edge counts) for :func:`dfg_svg`."""
    graph = graphviz.Digraph(f"dfg{'all' if model.instance is None else model.instance}")
    graph.attr(rankdir=layout_direction(model), nodesep="0.15", ranksep="0.3", **LAYOUT_LIMITS)
    graph.attr("node", shape="box", fontname="DejaVu Sans", fontsize=str(FONT_SIZE))
    if styled:
        graph.attr(bgcolor="transparent")
        graph.attr("node", style="rounded,filled")
        graph.attr("edge", color="#57606a", arrowsize="0.6")
    for node in model.nodes:
        if not styled:
            graph.node(node.id, node.label)
            continue
        font = "white" if _dark(node.color) else "black"
        width = str(1 + min(node.count, 200) ** 0.5 / 4) if node.count > 1 else "0.9"
        graph.node(node.id, node.label, fillcolor=node.color, fontcolor=font, penwidth=width)
    for src, dst, count in model.edges:
        label = {"label": str(count), "fontsize": "9"} if styled and count > 1 else {}
        graph.edge(src, dst, weight=str(count), **label)
    return graph


def dfg_svg(model: DfgModel) -> str:
    """A static picture of the graph: SVG text drawn by Graphviz ``dot`` (for files and
    notebooks; the explorer draws :func:`dfg_figure`)."""
    if not model.nodes:
        return f"<p>instance {model.instance} recorded no nodes</p>"
    svg = dfg_graph(model, styled=True).pipe(format="svg", encoding="utf-8")
    return svg[svg.index("<svg") :]  # drop the XML prolog and doctype: it is embedded in HTML


@dataclass(frozen=True)
class DfgLayout:
    """Where dot put each box (centre and size, in points; y grows upwards) and each edge's
    route (the control points of its spline)."""

    boxes: dict[str, tuple[float, float, float, float]]
    routes: tuple[tuple[str, str, tuple[float, ...], tuple[float, ...]], ...]
    width: float
    height: float


def dfg_layout(model: DfgModel) -> DfgLayout:
    """Lay ``model`` out with Graphviz ``dot -Tplain`` (on the server)."""
    if not model.nodes:
        return DfgLayout({}, (), 0.0, 0.0)
    text = dfg_graph(model).pipe(format="plain", encoding="utf-8")
    boxes: dict[str, tuple[float, float, float, float]] = {}
    routes = []
    width = height = 0.0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "graph":
            width, height = float(parts[2]) * 72, float(parts[3]) * 72
        elif parts[0] == "node":
            x, y, w, h = (float(v) * 72 for v in parts[2:6])
            boxes[parts[1]] = (x, y, w, h)
        elif parts[0] == "edge":
            n = int(parts[3])
            points = [float(v) * 72 for v in parts[4 : 4 + 2 * n]]
            routes.append((parts[1], parts[2], tuple(points[0::2]), tuple(points[1::2])))
    return DfgLayout(boxes, tuple(routes), width, height)


HIGHLIGHT = "#000000"  # outline of the selected batch's nodes
PICKED = "#fb8500"  # outline of the selected node
FADED = 0.25  # fill alpha of the nodes outside a selected batch

# Labels grow with the zoom. A new font size makes BokehJS measure every label again (about
# 60 ms per 1,000 labels in headless Chromium), and that was the whole cost of a zoom step: on a
# graph of more than LABELS_SETTLE_ABOVE boxes the labels are hidden while the view moves and
# drawn once it holds still for SETTLE_MS (level of detail), and a label too small to read is
# never measured. 12 wheel steps on TreeLSTM small b64 unfolded (4,068 boxes) in the served app:
# 5.5-7.2 s before, 0.85-0.92 s after (105 boxes: 1.0-1.2 s).
LABELS_SETTLE_ABOVE = 500
SETTLE_MS = 200
_SCALE_LABELS = """
const span = Math.abs(xr.end - xr.start) || 1;
const width = fig.inner_width > 0 ? fig.inner_width : 900;
const size = base * width / span;
const show = () => {
  labels.visible = size >= 5.5;
  if (labels.visible) labels.glyph.text_font_size = Math.min(size, 15).toFixed(1) + "px";
};
if (!settle) {
  show();
} else {
  labels.visible = false;
  clearTimeout(labels.__acrobat_settle);
  labels.__acrobat_settle = setTimeout(show, settle);
}
"""


def dfg_figure(model: DfgModel, layout: DfgLayout | None = None, name: str = "dfg"):
    """The laid-out graph as a Bokeh figure: a box per node (source ``"nodes"``), a line per
    edge (``"edges"``), labels that scale with the zoom (hidden while too small to read), hover,
    tap to select, pan, wheel zoom, box zoom and reset."""
    layout = layout if layout is not None else dfg_layout(model)
    x_range, y_range = initial_view(layout)
    fig = figure(
        name=name,
        height=FRAME_HEIGHT + 40,
        sizing_mode="stretch_width",
        x_range=x_range,
        y_range=y_range,
        tools="pan,wheel_zoom,tap,reset,save",
        active_scroll="wheel_zoom",
        toolbar_location="above",
    )
    fig.add_tools(BoxZoomTool(match_aspect=True))
    fig.axis.visible = False
    fig.grid.visible = False
    edges = ColumnDataSource(_edge_columns(model, layout))
    fig.multi_line(
        xs="xs",
        ys="ys",
        line_width="width",
        line_color="#57606a",
        line_alpha=0.7,
        source=edges,
        name="edges",
    )
    nodes = ColumnDataSource(_node_columns(model, layout))
    boxes = fig.rect(
        x="x",
        y="y",
        width="w",
        height="h",
        fill_color="color",
        fill_alpha="alpha",
        line_color="outline",
        line_width="outline_width",
        source=nodes,
        name="nodes",
        selection_fill_alpha="alpha",
        nonselection_fill_alpha="alpha",
        selection_line_color=PICKED,
        nonselection_line_color="outline",
        nonselection_line_alpha=1.0,
    )
    labels = fig.text(
        x="x",
        y="y",
        text="label",
        text_color="font",
        text_align="center",
        text_baseline="middle",
        text_font_size=f"{FONT_SIZE}px",
        source=nodes,
        name="labels",
    )
    fig.add_tools(
        HoverTool(
            renderers=[boxes],
            tooltips=[
                ("kernel", "@kernel"),
                ("nodes", "@count (@members_text)"),
                ("instances", "@instances_text"),
                ("depth", "@depths_text"),
                ("batch", "@batches_text"),
            ],
        )
    )
    fig.select_one(TapTool).renderers = [boxes]
    settle = SETTLE_MS if len(model.nodes) > LABELS_SETTLE_ABOVE else 0
    scale = CustomJS(
        args={"xr": fig.x_range, "fig": fig, "labels": labels, "base": FONT_SIZE, "settle": settle},
        code=_SCALE_LABELS,
    )
    for prop in ("start", "end"):
        fig.x_range.js_on_change(prop, scale)
    aspect = CustomJS(args={"xr": fig.x_range, "yr": fig.y_range, "fig": fig}, code=_ASPECT)
    fig.js_on_change("inner_width", aspect, scale)
    fig.js_on_change("inner_height", aspect, scale)
    return fig


FRAME_HEIGHT = 600  # pixels of the drawing area
ASSUMED_WIDTH = 1000  # pixels, until the browser reports the real width (then _ASPECT fits x)
READABLE = 0.8  # the least initial scale (pixels per layout point): 8 px labels


def initial_view(layout: DfgLayout) -> tuple[Range1d, Range1d]:
    """The first window on the graph: the whole graph when it fits at a readable scale,
    else its producers' end (top-left) at that scale, to pan and zoom from. One scale on both
    axes (the browser's real width adjusts x, see ``_ASPECT``)."""
    pad = 12.0
    width, height = layout.width + 2 * pad, layout.height + 2 * pad
    fit = min(ASSUMED_WIDTH / width, FRAME_HEIGHT / height) if width and height else 1.0
    scale = min(max(fit, READABLE), 1.5)
    span_x, span_y = ASSUMED_WIDTH / scale, FRAME_HEIGHT / scale
    top = layout.height + pad
    left = -pad if span_x < width else (layout.width - span_x) / 2
    return (
        Range1d(left, left + span_x),
        Range1d(top - span_y, top) if span_y < height else _centred(layout.height, span_y),
    )


def _centred(extent: float, span: float) -> Range1d:
    start = (extent - span) / 2
    return Range1d(start, start + span)


_ASPECT = """
// one scale on both axes: the x span follows the plot's real width
const py = fig.inner_height / Math.abs(yr.end - yr.start);
if (fig.inner_width > 0 && py > 0) {
  const want = xr.start + fig.inner_width / py;
  if (Math.abs(xr.end - want) > 1e-6 * Math.max(1, Math.abs(want))) {
    xr.reset_end = want;
    xr.end = want;
  }
}
"""


def _dark(color: str) -> bool:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 140


def _texts(values: tuple[int, ...], text=str, limit: int = 12) -> str:
    shown = ", ".join(text(v) for v in values[:limit])
    return shown + (f", … ({len(values)})" if len(values) > limit else "")


def _node_columns(model: DfgModel, layout: DfgLayout) -> dict[str, list]:
    placed = [(node, layout.boxes[node.id]) for node in model.nodes if node.id in layout.boxes]
    data = {
        "id": [node.id for node, _ in placed],
        "x": [box[0] for _, box in placed],
        "y": [box[1] for _, box in placed],
        "w": [box[2] for _, box in placed],
        "h": [box[3] for _, box in placed],
        "label": [node.label for node, _ in placed],
        "color": [node.color for node, _ in placed],
        "kernel": [node.kernel for node, _ in placed],
        "count": [node.count for node, _ in placed],
        "members_text": ["#" + _texts(node.members) for node, _ in placed],
        "instances_text": [_texts(node.instances) for node, _ in placed],
        "depths_text": [_texts(node.depths, depth_text) for node, _ in placed],
        "batches_text": [_texts(node.batches) for node, _ in placed],
    }
    data.update(_highlight_columns(model, data["id"], None))
    return data


def _edge_columns(model: DfgModel, layout: DfgLayout) -> dict[str, list]:
    counts = {(src, dst): count for src, dst, count in model.edges}
    xs, ys, widths = [], [], []
    for src, dst, route_x, route_y in layout.routes:
        xs.append(list(route_x))
        ys.append(list(route_y))
        widths.append(1 + min(counts.get((src, dst), 1), 16) ** 0.5 / 2)
    return {"xs": xs, "ys": ys, "width": widths}


def _highlight_columns(model: DfgModel, ids: list[str], batch: int | None) -> dict[str, list]:
    by_id = {node.id: node for node in model.nodes}
    hit = [batch is not None and batch in by_id[i].batches for i in ids]
    faded = [batch is not None and not h for h in hit]
    return {
        "in_batch": hit,
        "alpha": [FADED if f else 1.0 for f in faded],
        "font": [
            "#24292f" if f or not _dark(by_id[i].color) else "white" for i, f in zip(ids, faded)
        ],
        "outline": [HIGHLIGHT if h else "#57606a" for h in hit],
        "outline_width": [3.0 if h else 1.0 for h in hit],
    }


def highlight_dfg(fig, model: DfgModel, batch: int | None) -> list[str]:
    """Outline the boxes holding nodes of run-wide batch ``batch`` (fade the others), in
    place; None clears. Returns the ids of the outlined boxes."""
    source = fig.select_one({"name": "nodes"}).data_source
    columns = _highlight_columns(model, list(source.data["id"]), batch)
    source.data.update(columns)
    return [i for i, hit in zip(source.data["id"], columns["in_batch"]) if hit]


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
