"""A selected batch or node read back from the trace: kernel, instances, depth, source lines."""

import acrobat
from acrobat.trace import BatchFormed, NodeRecorded, Trace
from acrobat.viz.selection import (
    batch_details,
    batch_details_html,
    kernel_origin,
    node_details,
    node_details_html,
)


def test_batch_details_list_its_nodes_instances_and_source(treelstm):
    trace = treelstm.runs["dynet-depth"]
    source = acrobat.models.source("treelstm")
    formed = trace.of(BatchFormed)
    for number, batch in enumerate(formed):
        details = batch_details(trace, number, source)
        nodes = [r for r in trace.of(NodeRecorded) if r.batch == number]
        assert (
            (details.kernel, details.size)
            == (batch.kernel, batch.size)
            == (
                batch.kernel,
                len(nodes),
            )
        )
        assert details.instances == tuple(sorted({r.instance for r in nodes}))
        assert details.depths == tuple(sorted({r.depth for r in nodes}))
        assert details.origin.file == "treelstm.py" and details.origin.lines
        assert all(text for _, text in details.origin.lines)  # quoted from the source
    assert batch_details(trace, len(formed), source) is None
    html = batch_details_html(batch_details(trace, 0, source), "A")
    assert 'data-batch="0"' in html and "data-instances=" in html and "line " in html


def test_node_details_give_kernel_line_depth_batch_and_shapes(treelstm):
    trace = treelstm.runs["acrobat"]
    record = trace.of(NodeRecorded)[-1]
    details = node_details(trace, record.node)
    assert (details.kernel, details.instance, details.batch) == (
        record.kernel,
        record.instance,
        record.batch,
    )
    assert details.origin.outputs and all("Tensor[" in t for t in details.origin.outputs)
    assert details.origin.lines and not details.origin.lines[0][1]  # no source: numbers only
    html = node_details_html(details, "B")
    assert f'data-node="{record.node}"' in html and "Tensor[" in html
    assert node_details(trace, 10**9) is None


def test_a_trace_without_kernel_maps_says_so():
    trace = Trace([BatchFormed(0, "k", 1, 0, "acrobat"), NodeRecorded(0, "k", 0, 0, 0, (), 0)])
    assert kernel_origin(trace, "k").lines == ()
    assert "no KernelMapped" in batch_details_html(batch_details(trace, 0))
