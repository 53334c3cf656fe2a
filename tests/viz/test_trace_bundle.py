"""Joining and splitting session traces; their JSON Lines text equals Trace.save's."""

import pytest

from acrobat.trace import HostSpan, PassApplied, RunSummary, Trace
from acrobat.viz.trace_bundle import dumps, join_traces, loads, split_trace


def test_join_then_split_gives_the_parts_back(treelstm):
    a, b = treelstm.runs["acrobat"], treelstm.runs["eager"]
    bundle = split_trace(join_traces(treelstm.compile, a, b))
    assert bundle.compile.events == treelstm.compile.events
    assert [run.events for run in bundle.runs] == [a.events, b.events]


def test_none_parts_are_skipped(treelstm):
    a = treelstm.runs["acrobat"]
    joined = join_traces(None, a, None)
    assert joined.events == a.events
    assert split_trace(joined).runs[0].events == a.events
    assert len(split_trace(joined).compile) == 0


def test_a_run_without_summary_is_still_a_run():
    trace = Trace([PassApplied("P", "a", "b"), HostSpan("total", 0.0, 1.0)])
    bundle = split_trace(trace)
    assert len(bundle.compile) == 1 and len(bundle.runs) == 1
    assert bundle.runs[0].events == [HostSpan("total", 0.0, 1.0)]


def test_text_matches_trace_save_and_round_trips(treelstm, tmp_path):
    trace = join_traces(treelstm.compile, treelstm.runs["acrobat"])
    path = tmp_path / "run.jsonl"
    trace.save(path)
    assert dumps(trace) == path.read_text()
    assert loads(dumps(trace)).events == trace.events
    assert Trace.load(path).events == loads(path.read_text()).events


@pytest.mark.parametrize("bad", ["not json", '{"event": "NoSuchEvent"}', "[1, 2]"])
def test_bad_lines_name_the_line(bad):
    text = dumps(Trace([RunSummary({"launches": 1})])) + "\n" + bad + "\n"
    with pytest.raises(ValueError, match=r"share\.jsonl:3: not a trace event"):
        loads(text, "share.jsonl")
