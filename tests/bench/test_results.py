"""Results files: a metadata row, rows appended as measured (a killed grid keeps them), and
``compare`` pairing two files row by row with a noise verdict."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acrobat.bench.__main__ import main
from acrobat.bench.compare import judge, pair_rows
from acrobat.bench.report import write_report
from acrobat.bench.results import ResultsWriter, machine_metadata, read_results

ROOT = Path(__file__).resolve().parents[2]


def _row(policy: str, ms: float, q1: float, q3: float, model: str = "treelstm") -> dict:
    return {
        "system": "acrobat",
        "model": model,
        "size": "tiny",
        "batch": 8,
        "policy": policy,
        "disabled": "",
        "backend": "numpy",
        "total_ms": ms,
        "total_q1_ms": q1,
        "total_q3_ms": q3,
    }


def test_metadata_names_the_code_machine_and_libraries():
    meta = machine_metadata(grid="paper")
    assert len(meta["commit"]) == 40 and isinstance(meta["dirty"], bool)  # run from a checkout
    assert meta["date"].endswith("+00:00") and meta["cores"] >= 1 and meta["usable_cores"] >= 1
    assert meta["cpu"] and meta["python"].count(".") == 2 and meta["numpy"] and meta["blas"]
    assert len(meta["load_avg"]) == 3 and meta["grid"] == "paper"
    json.dumps(meta)  # a JSON row


def test_rows_are_on_disk_as_soon_as_appended(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path, {"commit": "abc"}) as out:
        out.append(_row("acrobat", 1.0, 0.9, 1.1))
        assert read_results(path) == ({"commit": "abc"}, [_row("acrobat", 1.0, 0.9, 1.1)])
    path.write_text(path.read_text() + '{"system": "acr')  # a kill in the middle of a write
    assert len(read_results(path)[1]) == 1
    (tmp_path / "bad.jsonl").write_text("{}\nnot json\n{}\n")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_results(tmp_path / "bad.jsonl")


def test_report_csv_has_the_quartiles_and_skips_the_metadata(tmp_path):
    path = tmp_path / "r.jsonl"
    timed = {"gen_ms": 0.2, "sched_ms": 0.1, "exe_ms": 0.7, "launches": 3, "lower_bound": 3}
    with ResultsWriter(path, machine_metadata()) as out:
        out.append({**_row("acrobat", 1.0, 0.9, 1.1), **timed})
    csv_path = write_report([path], tmp_path / "rep")[0]
    head, row = csv_path.read_text().splitlines()[:2]
    assert "total_q1_ms,total_q3_ms" in head and ",1.0,0.9,1.1," in row


def test_judge_calls_a_change_only_when_iqrs_are_apart_and_over_five_percent():
    assert judge((10.0, 9.8, 10.2), (10.1, 9.9, 10.3)) == (pytest.approx(1.01), "within noise")
    assert judge((10.0, 9.9, 10.1), (10.3, 10.2, 10.4))[1] == "within noise"  # apart, 3%
    assert judge((10.0, 9.0, 11.0), (12.0, 10.5, 13.0))[1] == "within noise"  # 20%, overlap
    assert judge((10.0, 9.9, 10.1), (12.0, 11.9, 12.1)) == (pytest.approx(1.2), "slower")
    assert judge((10.0, 9.9, 10.1), (8.0, 7.9, 8.1))[1] == "faster"
    assert judge((10.0, None, None), (12.0, None, None))[1] == "no IQR"  # no claim


def test_compare_pairs_rows_and_names_the_slower_ones(tmp_path, capsys):
    a = [_row("acrobat", 10.0, 9.9, 10.1), _row("eager", 50.0, 49.0, 51.0)]
    a.append(_row("acrobat", 5.0, 4.9, 5.1, model="birnn"))
    b = [_row("acrobat", 13.0, 12.8, 13.2), _row("eager", 50.5, 49.5, 51.5)]
    b.append(_row("dynet-depth", 7.0, 6.9, 7.1))
    pairs, only_a, only_b = pair_rows(a, b)
    assert [p.verdict for p in pairs] == ["slower", "within noise"]
    assert [k[1] for k in only_a] == ["birnn"] and [k[4] for k in only_b] == ["dynet-depth"]
    for name, rows in (("a", a), ("b", b)):
        with ResultsWriter(tmp_path / f"{name}.jsonl", {"commit": name * 40}) as out:
            for r in rows:
                out.append(r)
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 0
    text = capsys.readouterr().out
    assert "A " in text and "commit aaaaaaaaaa" in text and "commit bbbbbbbbbb" in text
    slower = next(line for line in text.splitlines() if "slower <<" in line)
    assert "acrobat treelstm tiny 8" in slower and " 1.30 " in slower
    assert sum(" >>" in line or " <<" in line for line in text.splitlines()) == 1
    assert "2 pairs: 1 within noise, 1 slower in B, 0 faster in B (IQRs apart and > 5%), 0" in text
    assert "only in A: 1, only in B: 1" in text


def _configs(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["system"] not in ("sgemm", "stream")]


def test_a_killed_grid_leaves_its_rows(tmp_path):
    """A grid killed after its first configurations were measured leaves a valid file: the
    metadata row and every row done, each a whole JSON line."""
    out = tmp_path / "paper.jsonl"
    command = [sys.executable, "-m", "acrobat.bench", "paper", "--quick", "--no-peers"]
    command += ["--models", "treelstm", "birnn", "--batches", "2", "4", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    grid = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and grid.poll() is None:
            if out.exists() and len(_configs(read_results(out)[1])) >= 2:
                break
            time.sleep(0.2)
        assert grid.poll() is None, f"the grid ended before it was killed: {grid.stderr.read()}"
        grid.send_signal(signal.SIGKILL)
        grid.wait(timeout=30)
    finally:
        if grid.poll() is None:
            grid.kill()
            grid.wait()
    meta, rows = read_results(out)
    assert meta["grid"] == "paper" and meta["argv"][0] == "paper"
    assert {r["system"] for r in rows} >= {"sgemm", "stream", "acrobat"}
    configs = _configs(rows)
    assert configs and all(r["total_ms"] > 0 for r in configs if r["system"] == "acrobat")
    assert out.read_text().endswith("\n")
