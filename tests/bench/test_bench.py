"""The benchmark harness: the quick paper grid runs and its output is complete."""

import json
import os

import pytest

import acrobat
from acrobat.bench.__main__ import main
from acrobat.bench.grid import check
from acrobat.bench.load import Busy
from acrobat.bench.results import read_results
from acrobat.models import MODEL_NAMES


@pytest.fixture(scope="module")
def quick_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "paper.jsonl"
    assert main(["paper", "--quick", "--out", str(out)]) == 0
    meta, rows = read_results(out)
    assert meta["grid"] == "paper" and meta["cores"] >= 1 and meta["numpy"]
    return rows


def test_quick_paper_grid_is_complete(quick_rows):
    assert check(quick_rows, "paper") == []
    keys = {
        (r["model"], r["size"], r["batch"])
        for r in quick_rows
        if r["system"] not in ("sgemm", "stream")
    }
    assert keys == {(m, "tiny", b) for m in MODEL_NAMES for b in (2, 4)}
    for m, s, b in keys:
        rs = [r for r in quick_rows if (r.get("model"), r.get("size"), r.get("batch")) == (m, s, b)]
        assert {r["policy"] for r in rs if r["system"] == "acrobat"} == {
            p.name for p in acrobat.policies()
        }
        assert any(r["system"] == "eager-numpy" for r in rs)
        for r in rs:
            if r["system"] == "acrobat" and r["strategy"] == "direct":  # strategy="auto" chose it
                assert r["policy"] == "acrobat" and "direct" in r["strategy_runs"]
                # the schedule's facts still come from the (batched) traced run
                assert r["launches"] >= r["lower_bound"] > 0
                assert r["total_ms"] > 0 and r["flops"] > 0
            elif r["system"] == "acrobat":
                assert r["strategy"] == "batched"
                assert r["launches"] >= r["lower_bound"] > 0
                assert r["total_ms"] > 0 and r["flops"] > 0
            if r["system"] == "acrobat":
                assert r["min_bytes"] > 0  # the roofline's least traffic
    assert any(r["system"] == "sgemm" and r["gflops"] > 0 for r in quick_rows)
    assert any(r["system"] == "stream" and r["gbps"] > 0 for r in quick_rows)
    assert {r["model"] for r in quick_rows if r["system"] == "hand-batched"} == {
        "treelstm",
        "birnn",
    }


def test_check_catches_a_wrong_output(quick_rows):
    bad = [dict(r) for r in quick_rows]
    victim = next(r for r in bad if r["system"] == "acrobat" and r["policy"] == "eager")
    victim["checksum"] += 1.0
    assert any("checksum" in p for p in check(bad, "paper"))


def test_run_prints_one_json_row(capsys):
    assert (
        main(
            [
                "run",
                "--model",
                "treelstm",
                "--size",
                "tiny",
                "--batch",
                "3",
                "--runs",
                "2",
                "--warmup",
                "1",
                "--disable",
                "hoisting",
            ]
        )
        == 0
    )
    row = json.loads(capsys.readouterr().out)
    assert row["disabled"] == "hoisting" and row["batch"] == 3
    for k in (
        "gen_ms",
        "sched_ms",
        "exe_ms",
        "total_ms",
        "launches",
        "mean_batch",
        "lower_bound",
        "flops",
        "gflops",
        "peak_bytes",
        "total_min_ms",
        "total_max_ms",
        "total_q1_ms",
        "total_q3_ms",
        "exe_q1_ms",
        "load_avg",
        "blas",
        "blas_threads",
        "threads",
        "openblas_num_threads",
        "native",
        "jit_ms",
        "host_code",
    ):
        assert k in row
    assert row["native"] == acrobat.native.status()
    if acrobat.native.load() is not None and row["strategy"] == "batched":
        assert row["host_code"] == "c"  # the harness runs the compiled host program
    assert row["total_min_ms"] <= row["total_q1_ms"] <= row["total_ms"] <= row["total_q3_ms"]
    assert row["total_q3_ms"] <= row["total_max_ms"]


def test_run_forces_threads(capsys):
    args = ["run", "--model", "birnn", "--size", "tiny", "--batch", "2", "--runs", "1"]
    assert main([*args, "--warmup", "0", "--threads", "1"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["threads"] in ("forced 1 (threads=1)", "no BLAS thread control")


def test_every_row_carries_spread_load_and_threads(quick_rows):
    for r in quick_rows:
        if r["system"] in ("acrobat", "eager-numpy", "hand-batched"):
            for k in ("total_q1_ms", "total_q3_ms", "total_min_ms", "total_max_ms", "load_avg"):
                assert k in r, (r["system"], k)
            assert r["blas"] and "blas_threads" in r and r["threads"]


def test_load_test_runs_quiet_and_busy(capsys):
    assert main(["load-test", "--size", "tiny", "--batch", "2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "quiet/auto" in out and "busy/auto / quiet/auto" in out and "BLAS:" in out


def test_report_files(quick_rows, tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in quick_rows))
    assert main(["report", str(src), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep.md").read_text()
    assert "| treelstm | tiny | 2 | acrobat | acrobat |" in md
    html = (tmp_path / "rep.html").read_text()
    assert "<html" in html.lower() and "Bokeh" in html
    assert (tmp_path / "rep.csv").read_text().startswith("model,size,batch")
    summary = (tmp_path / "rep-summary.md").read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| treelstm | tiny | 2 |"))
    a = next(
        r
        for r in quick_rows
        if r["system"] == "acrobat"
        and r["policy"] == "acrobat"
        and r["model"] == "treelstm"
        and r["batch"] == 2
    )
    assert f"({a['launches']})" in row or f"{a['launches']} (" in row
    assert "–" in row or "(" in row  # medians with their interquartile ranges
    assert "acrobat / min(eager policy, per-instance) =" in summary


def _row(system: str, policy: str, ms: float, model: str = "treelstm", batch: int = 64):
    """A grid row with just what the report's targets read."""
    return {
        "system": system,
        "policy": policy,
        "total_ms": ms,
        "model": model,
        "size": "small",
        "batch": batch,
    }


def test_targets_say_met_or_missed():
    from acrobat.bench.report import targets

    row = _row
    rows = [
        row("acrobat", "acrobat", 30.0),
        row("acrobat", "eager", 300.0),
        row("eager-numpy", "-", 200.0),
        row("hand-batched", "-", 35.0),
        row("dynet-depth", "depth", 70.0),
        row("dynet-agenda", "agenda", 50.0),
    ]
    text = targets(rows)
    assert "acrobat / min(eager policy, per-instance) = 0.15 (met" in text
    assert "DyNet best (agenda) / acrobat = 1.67 (MISSED, target >= 2.0)" in text
    assert "acrobat / hand-batched = 0.86 (met" in text


def test_acrobat_policies_and_dynet_systems_of_one_name_stay_apart():
    """acrobat's ``dynet-depth`` policy (our runtime) and DyNet's ``dynet-depth`` system
    (DyNet itself) are different columns of the summary, whichever row comes last."""
    from acrobat.bench.report import summary

    def row(system, policy, ms):
        return _row(system, policy, ms, model="birnn")

    for order in (1, -1):
        rows = [
            row("acrobat", "acrobat", 31.0),
            row("acrobat", "dynet-depth", 33.0),
            row("acrobat", "eager", 300.0),
            row("dynet-depth", "depth", 27.0),
            row("acrobat", "dynet-agenda", 50.0),
            row("dynet-agenda", "agenda", 40.0),
        ][::order]
        line = next(x for x in summary(rows).splitlines() if x.startswith("| birnn |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[3] == "31" and cells[7] == "33" and cells[8] == "300"
        assert cells[-1] == "27 depth"
        assert "DyNet best (depth) / acrobat = 0.87 (MISSED" in summary(rows)


def test_busy_process_is_bounded_and_killed():
    calls = []
    busy = Busy(lambda: calls.append(1) or {"total_ms": 1.0}, seconds=30, lead=0.0)
    assert busy() == {"total_ms": 1.0} and busy() == {"total_ms": 1.0}
    proc = busy.proc
    assert proc is not None and proc.poll() is None  # alive (suspended) between calls
    busy.close()
    assert proc.poll() is not None and busy.proc is None and calls == [1, 1]


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_the_load_tests_busy_process_is_pinned_to_the_last_cpu():
    from acrobat.bench.load import busy_cpu

    cpu = busy_cpu()
    allowed = sorted(os.sched_getaffinity(0))
    assert cpu == (allowed[-1] if len(allowed) > 1 else None)
    if cpu is None:
        pytest.skip("one CPU: nothing to pin beside")
    busy = Busy(lambda: os.sched_getaffinity(busy.proc.pid), seconds=30, lead=0.0, cpu=cpu)
    try:
        assert busy() == {cpu}  # the neighbour keeps to one core
    finally:
        busy.close()
    free = Busy(lambda: os.sched_getaffinity(free.proc.pid), seconds=30, lead=0.0)
    try:
        assert free() == set(allowed)  # unpinned: anywhere
    finally:
        free.close()


def _spy_on_measure(monkeypatch, grid) -> list:
    """The names of the configurations of every ``measure`` call the grid makes."""
    calls = []
    real = grid.measure

    def spy(configs, **kw):
        calls.append(tuple(configs))
        return real(configs, **kw)

    monkeypatch.setattr(grid, "measure", spy)
    return calls


def test_a_grid_row_is_measured_interleaved(monkeypatch, tmp_path):
    """The acrobat policies and the NumPy baselines of one (model, size, batch) are one
    measurement (round-robin), so a load that comes and goes hits them alike."""
    from acrobat.bench import grid

    calls = _spy_on_measure(monkeypatch, grid)
    out = tmp_path / "g.jsonl"
    args = ["paper", "--quick", "--models", "treelstm", "--batches", "2", "--out", str(out)]
    assert main(args) == 0
    assert len(calls) == 1
    names = calls[0]
    assert {n.split(":")[1] for n in names} == {p.name for p in acrobat.policies()} | {
        "eager-numpy",
        "hand-batched",
    }
    rows = read_results(out)[1]
    loads = {r["load_avg"] for r in rows if r["system"] not in ("sgemm", "stream")}
    assert len(loads) == 1  # one measurement: one load record for the whole row


def test_auto_explores_before_the_timed_runs():
    """An acrobat case with strategy="auto" lets the chooser measure both strategies before
    it is timed (its exploration is a warm-up): the timed runs all run its choice. Other
    policies are always batched and need no such runs."""
    from acrobat.bench.harness import acrobat_case
    from acrobat.runtime.strategy import MIN_RUNS

    case = acrobat_case("treelstm", "tiny", 4, "acrobat")
    m = acrobat.measure({"run": case.fn}, repeats=3, warmup=0, metrics=case.metrics)
    row = case.row(m, "run")
    assert row["settle_runs"] == 2 * MIN_RUNS  # the traced run was the chooser's warm-up
    # the timed runs run its choice, but for the one doubt re-run the rule allows (when the
    # winner's runs since the choice cost 5% more than the loser's: a loaded machine)
    counts = sorted(int(part.rsplit(" ", 1)[1]) for part in row["strategy_runs"].split(", "))
    assert counts in ([3], [1, 2]), row["strategy_runs"]
    other = acrobat_case("treelstm", "tiny", 4, "dynet-depth")
    m = acrobat.measure({"run": other.fn}, repeats=1, warmup=0, metrics=other.metrics)
    assert other.row(m, "run")["settle_runs"] == 0


FAKE_DYNET = """
import json, sys
job = json.load(open(sys.argv[1]))
print("a line that is not an answer")
print(json.dumps({"ready": True}), flush=True)
n = 0
for line in sys.stdin:
    if line.strip() != "run":
        break
    n += 1
    if job["strategy"] == 2 and n > 1:
        print("the depth worker fell over", file=sys.stderr)
        sys.exit(3)
    print(json.dumps({"ms": 1.0 + job["strategy"], "checksum": 0.5}), flush=True)
"""


def test_dynet_is_measured_interleaved_in_its_own_processes(monkeypatch, tmp_path):
    """Each DyNet strategy runs in a worker process that answers one timed forward pass
    per call, inside the grid row's one interleaved measurement; a worker that dies is
    reported as failed and the row is measured again without it; no worker outlives the
    row. (A stand-in worker speaks the protocol: DyNet itself is an optional peer.)"""
    import sys
    from types import SimpleNamespace

    from acrobat.baselines.peers import runner
    from acrobat.bench import grid
    from acrobat.runtime import threads

    script = tmp_path / "fake_dynet.py"
    script.write_text(FAKE_DYNET)
    made = []

    def peer(model, params, instances, strategy):
        p = runner.DynetPeer(model, params, instances, strategy, sys.executable, script)
        made.append(p)
        # it runs only when called: the thread rule counts it as this process's own
        assert p.proc.pid in threads._TURNS.pids
        return p

    calls = _spy_on_measure(monkeypatch, grid)
    monkeypatch.setattr(grid, "DynetPeer", peer)
    monkeypatch.setattr(grid, "run_torch", lambda *a: {"system": "torch-eager", "status": "x"})
    args = SimpleNamespace(
        quick=False, models=["birnn"], sizes=["tiny"], batches=[2], runs=2, no_peers=False
    )
    rows = {r.get("system"): r for r in grid.run_grid("paper", args)}
    assert len(calls) == 2  # the depth worker died in the first: measured again without it
    assert {"peer:off:", "peer:agenda:", "peer:depth:"} <= set(calls[0])
    assert "acrobat:acrobat:" in calls[0] and "peer:depth:" not in calls[1]
    assert rows["dynet-off"]["total_ms"] == 1.0 and rows["dynet-agenda"]["total_ms"] == 2.0
    assert rows["dynet-off"]["measured"] == "interleaved" and rows["dynet-off"]["batch"] == 2
    depth = rows["dynet-depth"]
    assert depth["status"].startswith("failed") and "fell over" in depth["status"]
    assert "total_ms" not in depth
    assert len(made) == 3 and all(p.proc is None for p in made)  # every worker closed
    assert not threads._TURNS.pids  # and no longer counted


def test_roofline_explains_a_missed_row_and_tables_every_row():
    """A row over the no-lose line says how near it and the faster other come to the
    machine's floor (its FLOPs at the SGEMM rate, its least bytes at the copy rate); the
    summary's roofline table has every acrobat row, with the larger floor deciding."""
    from acrobat.bench.report import roofline, summary, targets

    limits = [
        {"system": "sgemm", "model": "-", "size": "2048^3", "batch": 0, "gflops": 100.0},
        {"system": "stream", "model": "-", "size": "copy", "batch": 0, "gbps": 10.0},
    ]
    a = {**_row("acrobat", "acrobat", 110.0, model="berxit", batch=8)}
    a.update(flops=5e9, min_bytes=2e8)  # 50 ms of FLOPs, 20 ms of bytes
    rows = [*limits, a, _row("acrobat", "eager", 100.0, "berxit", 8)]
    rows.append(_row("eager-numpy", "-", 104.0, "berxit", 8))
    rl = roofline(a, 100.0, 10.0)
    assert rl["bound"] == "compute" and rl["compute_ms"] == pytest.approx(50.0)
    assert rl["memory_ms"] == pytest.approx(20.0) and rl["of_bound"] == pytest.approx(50 / 110)
    text = targets(rows)
    assert "= 1.10 (MISSED, target <= 1.05); roofline: 5 GFLOP, compute-bound" in text
    assert "floor 50 ms: acrobat at 45% of it, the faster other at 50%" in text
    table = summary(rows)
    line = next(x for x in table.splitlines() if x.startswith("| berxit | small | 8 | 5 |"))
    assert "| 200 | 50 | 20 | 110 | 45% | 50% |" in line
    # memory-bound when the bytes take longer; no limits rows: no roofline, no error
    b = {**a, "flops": 1e8, "min_bytes": 5e9}
    assert roofline(b, 100.0, 10.0)["bound"] == "memory"
    assert roofline(a, None, None) is None and "roofline" not in targets(rows[2:])


def test_executed_bytes_counts_weights_once_and_tensors_per_node():
    """The compulsory traffic of a run: every weight its kernels read, once, and each
    node's tensor inputs and outputs once (computed here from the kernels' signatures)."""
    import math

    import numpy as np

    from acrobat.bench.harness import executed_bytes, stream_limit
    from acrobat.ir.types import TensorType
    from acrobat.trace import KernelLaunched

    spec = acrobat.models.load("treelstm", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    res = acrobat.run(prog, spec.instances(3, seed=1), strategy="batched")
    launches = res.trace.of(KernelLaunched)
    assert launches

    def nbytes(ty):
        return math.prod(ty.shape) * np.dtype(ty.dtype).itemsize

    want, read = 0, set()
    for e in launches:
        ks = [prog.kernels[k] for k in e.kernel.split("+")]
        read.update(w for k in ks for w in k.weights)
        node = sum(nbytes(t) if isinstance(t, TensorType) else 8 for _, t, _ in ks[0].params)
        want += e.size * (node + sum(nbytes(t) for t in ks[0].outputs))
    assert len(read) > 1 and len(launches) > len(read)  # weights read by several launches
    assert executed_bytes(prog, res) == want + sum(prog.params[w].nbytes for w in read) > 0
    row = stream_limit(mib=4, runs=2)
    assert row["system"] == "stream" and row["gbps"] > 0
