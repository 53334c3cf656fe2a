"""The run's trace and statistics (issue #5, item 4).

Viewers read traces only, so a run's trace must hold every kind of event, survive a trip
through JSON Lines unchanged, and agree with the statistics it is shown beside.
"""

from __future__ import annotations

from collections import Counter

import pytest

import acrobat
from acrobat.trace import (
    BatchFormed,
    HostSpan,
    KernelCompiled,
    KernelLaunched,
    KernelMapped,
    NodeRecorded,
    ScheduleFormed,
    Trace,
)
from tests.runtime.helpers import MODELS, POLICIES, batch, program

STATS_KEYS = (
    "gen_ms",
    "sched_ms",
    "exe_ms",
    "total_ms",
    "launches",
    "mean_batch",
    "lower_bound",
    "peak_arena_bytes",
    "nodes",
    "passes",
)
MS = 0.5  # timer slack (ms) when comparing sums of separately measured spans


def _run(model, policy="acrobat", trace_level="nodes", n=5):
    xs, _ = batch(model, n, 3)
    return acrobat.run(program(model), xs, policy=policy, trace_level=trace_level)


@pytest.mark.parametrize("model", ["treelstm", "birnn", "berxit"])
@pytest.mark.parametrize("level", ["batches", "nodes"])
def test_save_load_round_trip(model, level, tmp_path):
    res = _run(model, trace_level=level)
    path = tmp_path / "run.jsonl"
    res.trace.save(path)
    loaded = Trace.load(path)
    assert loaded.events == res.trace.events
    assert len(path.read_text().splitlines()) == len(res.trace)
    loaded.save(tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl").read_text() == path.read_text()


@pytest.mark.parametrize("model", MODELS)
def test_every_event_kind_is_present(model):
    res = _run(model, trace_level="batches")
    kinds = Counter(e.kind for e in res.trace)
    for kind in (KernelCompiled, BatchFormed, KernelLaunched, ScheduleFormed, HostSpan):
        assert kinds[kind.__name__] > 0, f"no {kind.__name__} in the trace"
    assert kinds["NodeRecorded"] == 0  # only at trace_level="nodes"
    compiled = {e.kernel for e in res.trace.of(KernelCompiled)}
    assert {e.kernel for e in res.trace.of(BatchFormed)} <= compiled
    assert all(e.backend == "numpy" and e.source for e in res.trace.of(KernelCompiled))


def test_trace_off_records_nothing():
    res = _run("treelstm", trace_level="off")
    assert len(res.trace) == 0
    assert res.stats["launches"] > 0


def test_unknown_trace_level_is_a_name_error():
    with pytest.raises(acrobat.AcrobatNameError):
        _run("treelstm", trace_level="node")


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", MODELS)
def test_node_events_cover_every_node(model, policy):
    res = _run(model, policy)
    nodes = res.trace.of(NodeRecorded)
    assert len(nodes) == res.stats["nodes"] > 0
    assert sorted(e.node for e in nodes) == list(range(len(nodes)))
    assert {e.instance for e in nodes} == set(range(res.stats["instances"]))
    # the batches of each pass are exactly the node events grouped by batch (a twin
    # group's batch, "a+b", holds its members' nodes: acrobat.codegen.twins)
    launched = Counter(e.kernel for e in res.trace.of(BatchFormed))
    group_of = {m: k for k in launched if "+" in k for m in k.split("+")}
    assert not set(group_of) & set(launched)  # a twin's nodes always run as its group's
    recorded = Counter(group_of.get(e.kernel, e.kernel) for e in nodes)
    sizes = Counter()
    for e in res.trace.of(BatchFormed):
        sizes[e.kernel] += e.size
    assert sizes == recorded
    assert set(launched) == set(recorded)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("model", MODELS)
def test_stats_are_present_and_consistent(model, policy):
    res = _run(model, policy)
    s, trace = res.stats, res.trace
    for key in STATS_KEYS:
        assert key in s, f"stats lack {key}"
    batches = trace.of(BatchFormed)
    schedules = trace.of(ScheduleFormed)
    assert s["launches"] == len(batches) == len(trace.of(KernelLaunched))
    assert s["launches"] >= s["lower_bound"] > 0
    assert s["mean_batch"] == pytest.approx(s["nodes"] / s["launches"])
    assert s["nodes"] == sum(b.size for b in batches) == sum(e.nodes for e in schedules)
    assert s["lower_bound"] == sum(e.lower_bound for e in schedules)
    assert s["passes"] == sum(1 for e in schedules if e.nodes)
    assert s["peak_arena_bytes"] > 0
    assert s["policy"] == policy and s["instances"] == 5
    for key in ("gen_ms", "sched_ms", "exe_ms", "total_ms"):
        assert s[key] >= 0
    assert s["gen_ms"] + s["sched_ms"] + s["exe_ms"] <= s["total_ms"] + MS
    if policy == "eager":
        assert s["mean_batch"] == 1.0


@pytest.mark.parametrize("model", ["treelstm", "stackrnn"])
def test_times_lie_inside_the_run(model):
    res = _run(model)
    total = res.stats["total_ms"]
    previous_end = 0.0
    for e in res.trace.of(KernelLaunched):
        assert 0 <= e.start_ms <= e.end_ms <= total + MS
        assert e.start_ms >= previous_end - 1e-6  # launches run one after another
        previous_end = e.end_ms
    for e in res.trace.of(HostSpan):
        assert 0 <= e.start_ms <= e.end_ms
        if e.name != "total":
            assert e.end_ms <= total + MS


def test_total_span_matches_total_ms():
    xs, _ = batch("treelstm", 16, 0)
    res = acrobat.run(program("treelstm"), xs, trace_level="nodes")
    (span,) = [e for e in res.trace.of(HostSpan) if e.name == "total"]
    assert span.end_ms == pytest.approx(res.stats["total_ms"], abs=0.05)


@pytest.mark.parametrize("model", ["berxit", "drnn"])
def test_batches_of_each_pass_are_numbered_from_zero(model):
    res = _run(model)
    by_pass: dict[int, list[int]] = {}
    for e in res.trace.of(BatchFormed):
        by_pass.setdefault(e.run_pass, []).append(e.index)
    assert sorted(by_pass) == list(range(res.stats["passes"]))
    for indices in by_pass.values():
        assert indices == list(range(len(indices)))


@pytest.mark.parametrize("model", ["treelstm", "birnn", "nestedrnn"])
def test_gathered_bytes_add_up_and_zero_copy_saves(model):
    """Contiguous inputs are read in place (gather fusion); the trace sums to the stat."""
    xs, _ = batch(model, 8, 0)
    on = acrobat.run(program(model), xs)
    off = acrobat.run(program(model, ("gather_fusion",)), xs)
    for res in (on, off):
        launched = sum(e.bytes_gathered for e in res.trace.of(KernelLaunched))
        assert res.stats["bytes_gathered"] == launched
    assert on.stats["bytes_gathered"] <= off.stats["bytes_gathered"]


def test_each_kernel_is_mapped_to_its_source_lines_and_signature():
    """KernelMapped (made once at compile time) names the source lines, callers, ops and
    types of every kernel a traced run compiled, batched or direct."""
    spec = acrobat.models.load("treelstm", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    source = acrobat.models.source("treelstm").splitlines()
    for strategy in ("batched", "direct"):
        res = acrobat.run(prog, spec.instances(2), trace_level="nodes", strategy=strategy)
        mapped = {e.kernel: e for e in res.trace.of(KernelMapped)}
        assert set(mapped) == {e.kernel for e in res.trace.of(KernelCompiled)}
        leaf = mapped["cell_node0"]
        assert leaf.file == "treelstm.py" and leaf.functions == ("cell",)
        assert "embed" in leaf.ops and leaf.outputs == ("Tensor[8]", "Tensor[8]")
        assert leaf.params == ("word: int (host)",)
        assert any("embed" in source[n - 1] for n in leaf.lines)
        assert all("Tensor[8] (batched)" in p for p in mapped["cell_node1"].params)
    assert prog.kernel_map == mapped  # the run emits the program's own mapping
