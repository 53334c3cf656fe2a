"""DFG view: one instance's (or every instance's) graph from NodeRecorded, coloured by depth or
batch, folded when big, laid out by Graphviz and drawn by Bokeh."""

import pytest

import acrobat
from acrobat.trace import NodeRecorded, Trace
from acrobat.viz.dfg_view import (
    FOLD_ABOVE,
    MIXED,
    dfg_figure,
    dfg_graph,
    dfg_layout,
    dfg_legend_html,
    dfg_model,
    dfg_svg,
    highlight_dfg,
    instances_in,
    layout_direction,
)


def test_two_leaf_treelstm_has_three_nodes_and_two_edges(two_leaves):
    trace = two_leaves.runs["acrobat"]
    model = dfg_model(trace, 0)
    assert model.total_nodes == 3 and len(model.nodes) == 3
    assert len(model.edges) == 2 and all(count == 1 for _, _, count in model.edges)
    assert model.folded == ""
    kernels = sorted(node.kernel for node in model.nodes)
    assert kernels == ["cell_node0", "cell_node0", "cell_node1"]
    root = next(n for n in model.nodes if n.kernel == "cell_node1")
    assert {dst for _, dst, _ in model.edges} == {root.id}


def test_colour_by_depth_and_by_batch(two_leaves):
    trace = two_leaves.runs["acrobat"]
    for color_by in ("depth", "batch"):
        model = dfg_model(trace, 0, color_by=color_by)
        leaves = [n for n in model.nodes if n.kernel == "cell_node0"]
        root = next(n for n in model.nodes if n.kernel == "cell_node1")
        assert leaves[0].color == leaves[1].color != root.color
        assert [label for label, _ in model.legend] == [f"{color_by} 0", f"{color_by} 1"]


def test_instances_and_per_instance_graphs(treelstm):
    trace = treelstm.runs["acrobat"]
    records = trace.of(NodeRecorded)
    assert instances_in(trace) == [0, 1, 2, 3]
    for instance in instances_in(trace):
        model = dfg_model(trace, instance, fold_above=10_000)
        mine = [r for r in records if r.instance == instance]
        assert len(model.nodes) == len(mine)
        assert len(model.edges) == sum(len(set(r.inputs)) for r in mine)


def test_folding_kicks_in_above_the_threshold(treelstm):
    trace = treelstm.runs["acrobat"]
    total = dfg_model(trace, 0, fold_above=10_000).total_nodes
    assert dfg_model(trace, 0, fold_above=total).folded == ""
    folded = dfg_model(trace, 0, fold_above=total - 1)
    assert folded.folded == "kernel+depth"
    assert len(folded.nodes) < total
    assert sum(node.count for node in folded.nodes) == total
    assert all(len(node.depths) == 1 for node in folded.nodes)
    assert "folded by kernel+depth" in dfg_legend_html(folded)
    coarse = dfg_model(trace, 0, fold_above=1)
    assert coarse.folded == "kernel" and len(coarse.nodes) == 2  # cell_node0, cell_node1
    assert sum(node.count for node in coarse.nodes) == total
    assert any(src == dst for src, dst, _ in coarse.edges)  # cell_node1 feeds cell_node1


def test_folded_colour_by_batch_is_mixed_when_a_box_spans_batches():
    records = [
        NodeRecorded(0, "k", 0, 0, 0, (), 0),
        NodeRecorded(1, "k", 0, 0, 0, (), 1),
        NodeRecorded(2, "j", 0, 0, 1, (0, 1), 2),
    ]
    model = dfg_model(Trace(records), 0, color_by="batch", fold_above=2)
    box = next(n for n in model.nodes if n.kernel == "k")
    assert box.count == 2 and box.color == MIXED and box.batches == (0, 1)
    assert model.edges == (("g0", "g1", 2),)


def test_hundreds_of_nodes_render_quickly_folded(stackrnn):
    trace = stackrnn.runs["eager"]
    instance = max(instances_in(trace), key=lambda i: dfg_model(trace, i).total_nodes)
    model = dfg_model(trace, instance, fold_above=20)
    assert model.folded and len(model.nodes) <= max(20, len({n.kernel for n in model.nodes}))
    assert dfg_svg(model).startswith("<svg")


def test_svg_is_server_side_graphviz(two_leaves):
    model = dfg_model(two_leaves.runs["acrobat"], 0)
    svg = dfg_svg(model)
    assert svg.startswith("<svg") and "<?xml" not in svg
    assert svg.count('class="node"') == 3 and svg.count('class="edge"') == 2
    assert "cell_node1" in svg
    assert dfg_graph(model).source.count("->") == 2
    assert "nslimit" in dfg_graph(model).source  # bounded layout search: big graphs stay fast
    assert "recorded no nodes" in dfg_svg(dfg_model(Trace(), 5))


def test_bad_colour_choice_is_refused(two_leaves):
    with pytest.raises(ValueError, match="color_by"):
        dfg_model(two_leaves.runs["acrobat"], 0, color_by="kernel")


def test_wide_shallow_graphs_are_laid_out_left_to_right(treelstm):
    tree = dfg_model(treelstm.runs["acrobat"], 0)
    assert layout_direction(tree) == "TB" and "rankdir=TB" in dfg_graph(tree).source
    chains = [
        NodeRecorded(2 * n + k, "k", 0, 0, k, (2 * n,) if k else (), 0)
        for n in range(20)
        for k in (0, 1)
    ]
    wide = dfg_model(Trace(chains), 0)
    assert layout_direction(wide) == "LR" and "rankdir=LR" in dfg_graph(wide).source


def test_a_decision_node_on_the_last_level_reads_last():
    from acrobat.codegen.records import STRIDE
    from acrobat.trace import LAST_DEPTH
    from acrobat.viz.dfg_view import depth_text

    assert LAST_DEPTH == STRIDE - 1  # what the host program records on the last level
    assert depth_text(STRIDE - 1) == "last" and depth_text(7) == "7"
    spec = acrobat.models.load("stackrnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    res = acrobat.run(prog, spec.instances(3), trace_level="nodes", strategy="batched")
    model = dfg_model(res.trace, instance=0, fold_above=10**6)
    labels = "\n".join(n.label for n in model.nodes)
    assert "dlast" in labels and str(STRIDE - 1) not in labels


def _source(fig, name):
    return fig.select_one({"name": name}).data_source.data


def test_layout_places_every_box_producers_above_consumers(two_leaves):
    model = dfg_model(two_leaves.runs["acrobat"], 0)
    layout = dfg_layout(model)
    assert set(layout.boxes) == {node.id for node in model.nodes}
    root = next(n for n in model.nodes if n.kernel == "cell_node1")
    leaves = [n for n in model.nodes if n.kernel == "cell_node0"]
    assert all(layout.boxes[leaf.id][1] > layout.boxes[root.id][1] for leaf in leaves)
    assert len(layout.routes) == 2 and all(len(xs) >= 2 for _, _, xs, _ in layout.routes)
    assert all(w > 0 and h > 0 for _, _, w, h in layout.boxes.values())
    assert dfg_layout(dfg_model(Trace(), 0)).boxes == {}


def test_bokeh_figure_has_zoom_hover_tap_and_batch_labels(treelstm):
    from bokeh.models import BoxZoomTool, HoverTool, PanTool, TapTool, WheelZoomTool

    model = dfg_model(treelstm.runs["acrobat"], 0)
    fig = dfg_figure(model)
    nodes = _source(fig, "nodes")
    assert nodes["id"] == [n.id for n in model.nodes]
    assert nodes["label"] == [n.label for n in model.nodes]
    assert all(f" · b{n.batches[0]}" in n.label for n in model.nodes)  # batch not by colour alone
    assert len(_source(fig, "edges")["xs"]) == len(model.edges)
    for tool in (PanTool, WheelZoomTool, BoxZoomTool, HoverTool, TapTool):
        assert fig.select(type=tool), tool.__name__
    assert "batch" in dict(fig.select_one(HoverTool).tooltips)
    assert fig.select_one({"name": "labels"}) is not None
    assert fig.x_range.js_property_callbacks  # labels follow the zoom


def test_highlight_outlines_the_boxes_of_a_batch(treelstm):
    trace = treelstm.runs["dynet-depth"]
    model = dfg_model(trace, 1)
    fig = dfg_figure(model)
    batch = model.nodes[-1].batches[0]
    hit = highlight_dfg(fig, model, batch)
    assert hit == [n.id for n in model.nodes if batch in n.batches]
    nodes = _source(fig, "nodes")
    assert nodes["in_batch"] == [n.id in hit for n in model.nodes]
    assert all(a < 1.0 for a, h in zip(nodes["alpha"], nodes["in_batch"]) if not h)
    assert all(w > 1.0 for w, h in zip(nodes["outline_width"], nodes["in_batch"]) if h)
    assert highlight_dfg(fig, model, None) == [] and set(_source(fig, "nodes")["alpha"]) == {1.0}


def test_every_instance_in_one_graph(treelstm):
    trace = treelstm.runs["acrobat"]
    every = dfg_model(trace, None, fold_above=10**6)
    assert every.instance is None and every.total_nodes == len(trace.of(NodeRecorded))
    assert {i for n in every.nodes for i in n.instances} == set(instances_in(trace))
    assert all(" · i" in n.label for n in every.nodes)
    folded = dfg_model(trace, None, fold_above=10)
    assert folded.folded and sum(len(n.members) for n in folded.nodes) == every.total_nodes


@pytest.mark.parametrize("name", [info.name for info in acrobat.models.catalog()])
def test_built_in_models_draw_a_bounded_graph_at_small_size_batch_8(name):
    """The first draw of every model (small, batch 8): one instance unfolded, or every
    instance folded under the threshold, so the layout stays small (timed in the report)."""
    spec = acrobat.models.load(name, "small")
    prog = acrobat.compile(spec.module, spec.params)
    trace = acrobat.run(prog, spec.instances(8, seed=0), trace_level="nodes").trace
    for instance in (0, None):
        model = dfg_model(trace, instance)
        assert len(model.nodes) <= FOLD_ABOVE
        assert sum(len(n.members) for n in model.nodes) == model.total_nodes
    first = dfg_model(trace, 0)
    assert len(dfg_layout(first).boxes) == len(first.nodes)


def test_first_view_is_readable_whole_when_small_top_when_tall(two_leaves):
    from acrobat.viz.dfg_view import ASSUMED_WIDTH, FRAME_HEIGHT, READABLE, initial_view

    small = dfg_layout(dfg_model(two_leaves.runs["acrobat"], 0))
    x, y = initial_view(small)
    assert x.start <= 0 and x.end >= small.width and y.start <= 0 and y.end >= small.height
    chain = [NodeRecorded(n, "k", 0, 0, n, (n - 1,) if n else (), n) for n in range(80)]
    tall = dfg_layout(dfg_model(Trace(chain), 0))
    x, y = initial_view(tall)
    assert tall.height > FRAME_HEIGHT / READABLE  # would be a strip if shown whole
    assert y.end >= tall.height and y.end - y.start <= FRAME_HEIGHT / READABLE + 1e-6
    assert (x.end - x.start) / (y.end - y.start) == ASSUMED_WIDTH / FRAME_HEIGHT  # one scale


def test_labels_of_a_large_graph_wait_for_the_view_to_hold_still(treelstm, monkeypatch):
    from bokeh.models import CustomJS

    from acrobat.viz import dfg_view

    def settle(model) -> int:
        fig = dfg_figure(model)
        (scale,) = {cb for cb in fig.x_range.js_property_callbacks["change:start"]}
        assert isinstance(scale, CustomJS)
        return scale.args["settle"]

    model = dfg_model(treelstm.runs["acrobat"], None, fold_above=10**6)
    assert settle(model) == 0  # a small graph: labels follow every zoom step
    monkeypatch.setattr(dfg_view, "LABELS_SETTLE_ABOVE", len(model.nodes) - 1)
    assert settle(model) == dfg_view.SETTLE_MS
