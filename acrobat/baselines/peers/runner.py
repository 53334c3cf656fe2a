"""Running the peers for the benchmark harness (each DyNet strategy in its own process)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from acrobat.baselines.measure import LoadProbe, load_fields, measure, row_fields, spread
from acrobat.baselines.peers import torch_peer
from acrobat.ir.values import to_list

STRATEGIES = {"off": 0, "agenda": 1, "depth": 2}


def dynet_python() -> str | None:
    """The DyNet virtualenv's Python: $ACROBAT_DYNET_PYTHON, or ./.dynet-venv (make peers)."""
    for cand in (os.environ.get("ACROBAT_DYNET_PYTHON"), ".dynet-venv/bin/python"):
        if cand and Path(cand).exists():
            return cand
    return None


def _tree_json(t):
    """A tree as nested lists: ``[word]`` for a leaf, ``[left, right]`` for a node."""
    stack, res = [(t, False)], []
    while stack:
        node, done = stack.pop()
        if node.ctor == "Leaf":
            res.append([node.fields[0]])
        elif done:
            r, lft = res.pop(), res.pop()
            res.append([lft, r])
        else:
            stack += [(node, True), (node.fields[1], False), (node.fields[0], False)]
    return res[0]


def run_dynet(
    model: str, params: dict, instances: list, strategy: str, runs: int, warmup: int
) -> dict[str, Any]:
    """One DyNet strategy on the same weights and inputs; a 'not installed' row if absent."""
    py = dynet_python()
    base = {"system": f"dynet-{strategy}", "model": model, "policy": strategy}
    if py is None:
        return {**base, "status": "not installed (make peers builds .dynet-venv)"}
    if model not in ("treelstm", "birnn"):
        return {**base, "status": "no DyNet version of this model"}
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "w.npz", **params)
        data = [_tree_json(t) if model == "treelstm" else to_list(t) for t in instances]
        (Path(tmp) / "x.json").write_text(json.dumps(data))
        job = {
            "model": model,
            "strategy": STRATEGIES[strategy],
            "runs": runs,
            "warmup": warmup,
            "weights": str(Path(tmp) / "w.npz"),
            "inputs": str(Path(tmp) / "x.json"),
        }
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        script = Path(__file__).with_name("dynet_job.py")
        probe = LoadProbe().start()
        proc = subprocess.run(
            [py, str(script), str(Path(tmp) / "job.json")],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    if proc.returncode != 0:
        return {**base, "status": "failed: " + proc.stderr.strip().splitlines()[-1][:200]}
    load = probe.stop()  # over the whole job, its start-up included
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        **base,
        "status": "ok",
        **row_fields("total_ms", spread(res["times_ms"])),
        **load_fields(load),
        "blas": "dynet (Eigen, its own kernels)",
        "checksum": res["checksum"],
    }


def run_torch(model: str, params: dict, instances: list, runs: int, warmup: int) -> dict[str, Any]:
    base = {"system": "torch-eager", "model": model, "policy": "-"}
    why = torch_peer.available()
    if why:
        return {**base, "status": why}
    fn = torch_peer.PEER_MODELS.get(model)
    if fn is None:
        return {**base, "status": "no PyTorch version of this model"}
    m = measure(lambda: fn(params, instances), repeats=runs, warmup=warmup)
    return {
        **base,
        "status": "ok",
        **row_fields("total_ms", m.spread("run")),
        **load_fields(m.load),
        "blas": "torch",
        "checksum": _sum(m.results["run"]),
    }


def _sum(out) -> float:
    total = 0.0
    for o in out:
        for x in o if isinstance(o, list) else [o]:
            total += float(np.asarray(x, np.float64).sum())
    return total
