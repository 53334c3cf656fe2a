"""RunStats: documented fields, and still readable as the mapping earlier versions gave."""

from __future__ import annotations

import dataclasses
import json

import pytest

import acrobat
from acrobat.runtime.run import RunStats
from acrobat.trace import RunSummary
from tests.runtime.helpers import batch, program

FIELDS = (
    "gen_ms",
    "sched_ms",
    "exe_ms",
    "launches",
    "nodes",
    "passes",
    "lower_bound",
    "bytes_gathered",
    "host_ms",
    "total_ms",
    "mean_batch",
    "peak_arena_bytes",
    "instances",
    "policy",
    "backend",
    "strategy",
    "strategy_reason",
    "blas",
    "blas_threads",
    "threads",
)


def test_every_field_is_documented():
    doc = RunStats.__doc__
    for f in dataclasses.fields(RunStats):
        assert f"{f.name}:" in doc, f"RunStats.{f.name} is not documented"
    assert tuple(f.name for f in dataclasses.fields(RunStats)) == FIELDS


def test_stats_read_as_a_mapping():
    xs, _ = batch("treelstm", 3, 0)
    res = acrobat.run(program("treelstm"), xs)
    s = res.stats
    assert isinstance(s, RunStats)
    assert s["launches"] == s.launches > 0
    assert s.get("nodes") == s.nodes and s.get("missing", 7) == 7
    assert "policy" in s and "missing" not in s
    assert list(s) == list(FIELDS) == list(s.keys())
    assert len(s) == len(FIELDS)
    d = dict(s)
    assert d == s and s == d  # equal to the dict of its items, both ways
    assert dict(s.items()) == d and list(s.values()) == [d[k] for k in FIELDS]
    assert {**s}["backend"] == "numpy"
    json.dumps(d)  # plain values
    with pytest.raises(KeyError):
        s["missing"]
    # the trace keeps a plain dict of the same statistics
    assert res.trace.of(RunSummary)[-1].stats == d
