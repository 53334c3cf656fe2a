"""The Chrome Trace Event Format export: checked against the format's rules."""

import json

import pytest

import acrobat
from acrobat.errors import AcrobatNameError
from acrobat.trace import (
    Event,
    HostSpan,
    KernelLaunched,
    RunSummary,
    Trace,
    chrome_trace,
    run_slices,
)
from tests.chrome_format import check_chrome_trace, slices_of


@pytest.fixture(scope="module")
def treelstm():
    spec = acrobat.models.load("treelstm", "tiny")
    program = acrobat.compile(spec.module, spec.params)
    return program, spec.instances(6, seed=0)


def _run(treelstm, **kw):
    program, xs = treelstm
    return acrobat.run(program, xs, strategy="batched", **kw)


def test_checker_catches_what_the_format_forbids():
    ok = {"name": "a", "cat": "c", "ph": "X", "ts": 0, "dur": 10, "pid": 1, "tid": 1, "args": {}}
    names = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "t"}},
    ]
    assert check_chrome_trace({"traceEvents": [*names, ok]}) == []
    partial = dict(ok, name="b", ts=5, dur=10)  # starts inside "a", ends after it
    inside = dict(ok, name="c", ts=2, dur=8)  # ends exactly with "a": fine
    assert check_chrome_trace({"traceEvents": [*names, ok, inside]}) == []
    (err,) = check_chrome_trace({"traceEvents": [*names, ok, partial]})
    assert "overlaps the end of 'a'" in err
    assert check_chrome_trace({"traceEvents": [*names, dict(ok, pid=1.0)]})
    assert check_chrome_trace({"traceEvents": [*names, dict(ok, dur=-1)]})
    assert check_chrome_trace({"traceEvents": [*names, dict(ok, ts=float("nan"))]})
    assert check_chrome_trace({"traceEvents": [names[0], ok]})  # no thread_name
    assert check_chrome_trace({"traceEvents": [], "displayTimeUnit": "s"})


@pytest.mark.parametrize("level", ["batches", "nodes"])
def test_treelstm_run_exports_valid_nested_slices(treelstm, level):
    res = _run(treelstm, trace_level=level)
    doc = chrome_trace(res.trace)
    assert check_chrome_trace(doc) == []
    assert doc["displayTimeUnit"] == "ms"
    meta = {
        (e["name"], e["pid"], e["tid"]): e["args"] for e in doc["traceEvents"] if e["ph"] == "M"
    }
    assert meta[("process_name", 1, 0)] == {"name": "run 1: acrobat"}
    assert meta[("thread_name", 1, 1)] == {"name": "host"}
    assert meta[("thread_name", 1, 2)] == {"name": "kernels"}
    # the run slice is the run, in microseconds
    (run,) = [e for e in slices_of(doc, 1, 1) if e["cat"] == "run"]
    assert run["ts"] == 0 and run["dur"] == pytest.approx(res.stats.total_ms * 1e3)
    assert run["args"]["launches"] == res.stats.launches
    hosts = {e["name"] for e in slices_of(doc, 1, 1) if e["cat"] == "host"}
    assert hosts == {
        "upload",
        "graph_construction",
        "dfg_arrays",
        "scheduling",
        "execution",
        "outputs",
    }
    # one batch slice per launch, with its gather, kernel and scatter steps inside it
    launches = res.trace.of(KernelLaunched)
    kernels = slices_of(doc, 1, 2)
    batches = [e for e in kernels if e["cat"] == "batch"]
    assert len(batches) == len(launches) == res.stats.launches
    for launch, batch in zip(launches, batches):
        assert batch["name"] == launch.kernel
        assert batch["args"]["batch size"] == launch.size
        assert batch["args"]["bytes gathered"] == launch.bytes_gathered
        assert batch["args"]["policy"] == "acrobat"
        assert batch["args"]["run pass"] == 0
        steps = [e for e in kernels if e["args"].get("batch") == batch["args"]["batch"]]
        assert [e["cat"] for e in steps] == ["batch", "gather", "kernel", "scatter"]
        end = batch["ts"] + batch["dur"]
        for step in steps[1:]:
            assert batch["ts"] <= step["ts"] and step["ts"] + step["dur"] <= end + 1e-3
        kernel = steps[2]
        assert kernel["ts"] == pytest.approx(launch.start_ms * 1e3)
        assert kernel["dur"] == pytest.approx((launch.end_ms - launch.start_ms) * 1e3)
    # every batch lies inside an "execution" host phase
    executions = [e for e in slices_of(doc, 1, 1) if e["name"] == "execution"]
    for b in batches:
        assert any(
            x["ts"] <= b["ts"] and b["ts"] + b["dur"] <= x["ts"] + x["dur"] + 1e-3
            for x in executions
        )


def test_save_chrome_and_jsonl_and_an_unknown_format(treelstm, tmp_path):
    res = _run(treelstm)
    res.trace.save(tmp_path / "run.json", format="chrome")
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc == json.loads(json.dumps(chrome_trace(res.trace)))
    assert check_chrome_trace(doc) == []
    res.trace.save(tmp_path / "run.jsonl")  # JSON Lines stays the default
    assert Trace.load(tmp_path / "run.jsonl").events == res.trace.events
    with pytest.raises(AcrobatNameError, match="perfetto") as err:
        res.trace.save(tmp_path / "x", format="perfetto")
    assert "'jsonl', 'chrome'" in err.value.hint
    assert not (tmp_path / "x").exists()


def test_several_runs_are_several_processes(treelstm):
    program, xs = treelstm
    a = _run(treelstm, policy="acrobat").trace
    b = _run(treelstm, policy="eager").trace
    doc = chrome_trace(Trace(program.trace.events + a.events + b.events))
    assert check_chrome_trace(doc) == []
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {1: "run 1: acrobat", 2: "run 2: eager", 3: "compile (passes end to end)"}
    assert doc["otherData"]["runs"] == 2
    eager = [e for e in slices_of(doc, 2, 2) if e["cat"] == "batch"]
    assert len(eager) == len(b.of(KernelLaunched)) and {e["args"]["batch size"] for e in eager} == {
        1
    }
    passes = slices_of(doc, 3)
    assert [e["name"] for e in passes] == [
        p.name for p in program.trace.events if p.kind == "PassApplied"
    ]


def test_old_traces_without_steps_export_batches_only(treelstm):
    """A trace saved before launches recorded their steps: batches, no steps invented."""
    res = _run(treelstm)
    old = Trace(
        [
            KernelLaunched(e.index, e.kernel, e.size, e.start_ms, e.end_ms, e.bytes_gathered)
            if isinstance(e, KernelLaunched)
            else e
            for e in res.trace.events
        ]
    )
    line = json.dumps(old.of(KernelLaunched)[0].to_dict())
    for key in ("gather_start_ms", "scatter_end_ms", "fused_gather"):  # an old line lacks them
        line = line.replace(f', "{key}": null', "").replace(f', "{key}": false', "")
    assert "gather_start_ms" not in line
    assert Event.from_dict(json.loads(line)) == old.of(KernelLaunched)[0]  # it still loads
    doc = chrome_trace(old)
    assert check_chrome_trace(doc) == []
    cats = {e["cat"] for e in slices_of(doc, 1, 2)}
    assert cats == {"batch"}


def test_direct_strategy_has_no_batches(treelstm):
    program, xs = treelstm
    res = acrobat.run(program, xs, strategy="direct")
    doc = chrome_trace(res.trace)
    assert check_chrome_trace(doc) == []
    assert {e["name"] for e in slices_of(doc, 1)} == {"run: acrobat", "direct"}
    assert not slices_of(doc, 1, 2)


def test_fiber_program_with_several_passes_nests():
    spec = acrobat.models.load("stackrnn", "tiny")
    program = acrobat.compile(spec.module, spec.params)
    res = acrobat.run(program, spec.instances(4, seed=0), strategy="batched")
    assert res.stats.passes > 1
    doc = chrome_trace(res.trace)
    assert check_chrome_trace(doc) == []
    slices = run_slices(res.trace)
    by_pass = {s.args.get("run pass") for s in slices if s.cat == "batch"}
    assert by_pass == set(range(res.stats.passes))
    # graph construction holds the flushes made while fibers waited: nested below it
    (gc,) = [s for s in slices if s.name == "graph_construction"]
    inner = [s for s in slices if s.name == "execution" and s.start_ms < gc.end_ms]
    assert inner and all(s.depth > gc.depth for s in inner)


def test_untraced_run_exports_an_empty_trace(treelstm):
    res = _run(treelstm, trace_level="off")
    assert chrome_trace(res.trace)["traceEvents"] == []
    assert not res.trace.of(HostSpan) and not res.trace.of(RunSummary)


def test_device_times_get_a_device_thread():
    """Launches that measured device time (CUDA events) show it on thread 3, inside the
    kernel step's window (the device start is not recorded: placed at the kernel's start)."""
    t = Trace(
        [
            HostSpan("execution", 0.0, 1.0),
            KernelLaunched(0, "k", 4, 0.2, 0.5, 64, "cupy", 0.25, 0.1, 0.6, True),
            KernelLaunched(1, "k", 2, 0.6, 0.9, 32, "cupy", 0.5, 0.6, 0.95, True),
            HostSpan("total", 0.0, 1.0),
            RunSummary({"policy": "acrobat"}),
        ]
    )
    doc = chrome_trace(t)
    assert check_chrome_trace(doc) == []
    device = slices_of(doc, 1, 3)
    assert [e["dur"] for e in device] == pytest.approx([250.0, 300.0])  # 500 us cut to 300
    assert [e["args"]["device ms"] for e in device] == [0.25, 0.5]
    assert "fused gather" in slices_of(doc, 1, 2)[1]["args"]["step"]
