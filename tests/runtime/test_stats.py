"""RunStats: documented fields, and still readable as the mapping earlier versions gave."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

import acrobat
from acrobat.runtime.run import RunStats
from acrobat.trace import RunSummary, ScheduleFormed
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
    "kernel_ms",
    "host_share",
    "host_us_per_launch",
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
    "jit_ms",
    "native",
    "host_code",
    "engine",
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


def test_host_time_and_kernel_time():
    """kernel_ms is part of total_ms; the host share and the host time per launch are
    what the documentation says they are."""
    xs, _ = batch("treelstm", 3, 0)
    s = acrobat.run(program("treelstm"), xs, trace_level="off", strategy="batched").stats
    assert 0 < s.kernel_ms <= s.exe_ms <= s.total_ms
    host_ms = s.total_ms - s.kernel_ms
    assert s.host_share == pytest.approx(host_ms / s.total_ms)
    assert 0 < s.host_share < 1
    assert s.host_us_per_launch == pytest.approx(host_ms * 1e3 / s.launches)


@pytest.mark.parametrize("model", ["treelstm", "stackrnn"])
def test_lower_bound_is_computed_when_read(model):
    """Untraced runs compute the lower bound on first read; it equals the traced run's
    (summed over passes, as the ScheduleFormed events give it)."""
    xs, _ = batch(model, 4, 0)
    traced = acrobat.run(program(model), xs, trace_level="batches")
    bound = sum(e.lower_bound for e in traced.trace.of(ScheduleFormed))
    assert traced.stats.lower_bound == bound > 0
    lazy = acrobat.run(program(model), xs, trace_level="off", strategy="batched").stats
    assert lazy._bound is None  # not computed yet
    assert lazy["lower_bound"] == bound and lazy.lower_bound == bound
    assert dict(lazy)["lower_bound"] == bound
    assert not lazy._dfgs  # the DFGs are let go once the bound is known


def test_jit_cost_of_the_leveling_scheduler_is_shown_and_outside_the_run():
    xs, _ = batch("treelstm", 3, 0)
    res = acrobat.run(program("treelstm"), xs, strategy="batched")
    # paid when the program was prepared (building or loading the native module, or
    # numba's scheduler where the native module is off)
    assert res.stats.jit_ms > 0
    again = acrobat.run(program("treelstm"), xs, strategy="batched")
    assert again.stats.jit_ms == res.stats.jit_ms  # once per process


def test_the_native_kernel_state_is_shown_in_stats():
    xs, _ = batch("treelstm", 3, 0)
    for strategy in ("batched", "direct"):
        stats = acrobat.run(program("treelstm"), xs, strategy=strategy).stats
        assert stats.native == acrobat.native.status()
        assert stats.native in ("installed", "built", "loaded") or stats.native.startswith("off (")
        assert stats.jit_ms >= acrobat.native.load_ms()


_SCHEDULER_PROBE = """
import sys, acrobat
from acrobat.bench.harness import bench_instances
spec = acrobat.models.load("stackrnn", "tiny")
prog = acrobat.compile(spec.module, spec.params)
stats = acrobat.run(prog, bench_instances(spec, 8, 0), strategy="batched").stats
print(stats.launches, stats.passes, "numba" in sys.modules, stats.native)
"""


def test_the_native_scheduler_spares_the_numba_import_and_schedules_the_same():
    """With the native module on, a run never imports numba (its import and cache load
    cost a first run ~0.3 s); with it off, numba's scheduler makes the same launches."""
    out = {}
    for native_env in ("1", "0"):
        env = {**os.environ, "ACROBAT_NATIVE": native_env}
        done = subprocess.run(
            [sys.executable, "-c", _SCHEDULER_PROBE],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        launches, passes, numba, status = done.stdout.split(maxsplit=3)
        out[native_env] = (int(launches), int(passes), numba == "True", status.strip())
    assert out["0"][:2] == out["1"][:2]
    assert out["0"][2] and out["0"][3] == "off (ACROBAT_NATIVE=0)"
    if out["1"][3] in ("installed", "built", "loaded"):
        assert not out["1"][2]
