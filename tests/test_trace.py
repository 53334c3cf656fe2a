"""Trace events round-trip through JSON Lines."""

import pytest

from acrobat.trace import HostSpan, PassApplied, PhaseBoundary, Trace


def test_jsonl_round_trip(tmp_path):
    t = Trace()
    t.emit(PassApplied("ANormalForm", "before", "after", "3 bindings", 1.5))
    t.emit(HostSpan("scheduling", 0.0, 2.5))
    t.emit(PhaseBoundary(1))
    path = tmp_path / "t.jsonl"
    t.save(path)
    assert len(path.read_text().splitlines()) == 3
    back = Trace.load(path)
    assert back.events == t.events
    assert back.of(HostSpan) == [HostSpan("scheduling", 0.0, 2.5)]


def test_bad_line_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"event": "PhaseBoundary", "phase": 0}\n{"event": "Nope"}\n')
    with pytest.raises(ValueError, match=":2:"):
        Trace.load(path)
