"""Running the peers for the benchmark harness: PyTorch in this process (:func:`run_torch`),
each DyNet strategy in a worker process measured interleaved with acrobat
(:class:`DynetPeer`)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from acrobat.baselines.measure import load_fields, measure, row_fields
from acrobat.baselines.peers import torch_peer
from acrobat.ir.values import to_list
from acrobat.runtime import threads

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


def _write_job(tmp: Path, model: str, params: dict, instances: list, strategy: str) -> Path:
    """The job file of :mod:`dynet_job` (weights, inputs) in ``tmp``; returns its path."""
    np.savez(tmp / "w.npz", **params)
    data = [_tree_json(t) if model == "treelstm" else to_list(t) for t in instances]
    (tmp / "x.json").write_text(json.dumps(data))
    job = {
        "model": model,
        "strategy": STRATEGIES[strategy],
        "weights": str(tmp / "w.npz"),
        "inputs": str(tmp / "x.json"),
    }
    (tmp / "job.json").write_text(json.dumps(job))
    return tmp / "job.json"


def _unavailable(model: str, base: dict) -> dict | None:
    """The row of a DyNet strategy that cannot run here, or None when it can."""
    if dynet_python() is None:
        return {**base, "status": "not installed (make peers builds .dynet-venv)"}
    if model not in ("treelstm", "birnn"):
        return {**base, "status": "no DyNet version of this model"}
    return None


JOB_SCRIPT = Path(__file__).with_name("dynet_job.py")


class PeerFailed(RuntimeError):
    """A peer's worker process died or answered something other than a timing
    (``peer``: which)."""

    def __init__(self, message: str, peer: DynetPeer | None = None):
        super().__init__(message)
        self.peer = peer


class DynetPeer:
    """One DyNet strategy kept running in its own process (:mod:`dynet_job`),
    so that the benchmark can measure it interleaved with acrobat's configurations: a
    call runs one forward pass there and returns ``{"total_ms": DyNet's own timing of
    it, "checksum": ...}`` (the time excludes the pipe). The process waits on its input
    between calls, so it takes no CPU while the others run. Use as a context manager, or
    call :meth:`close`."""

    def __init__(
        self,
        model: str,
        params: dict,
        instances: list,
        strategy: str,
        python: str | None = None,
        script: Path = JOB_SCRIPT,
    ):
        self.base = {"system": f"dynet-{strategy}", "model": model, "policy": strategy}
        self.proc: subprocess.Popen | None = None
        self.status = "ok"
        if python is None:
            missing = _unavailable(model, self.base)
            if missing is not None:
                self.status = missing["status"]
                return
            python = dynet_python()
        self._tmp = tempfile.TemporaryDirectory()
        job = _write_job(Path(self._tmp.name), model, params, instances, strategy)
        # its messages go to a file: a pipe nobody reads could fill and block it
        self._err = open(Path(self._tmp.name) / "stderr.txt", "w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [python, str(script), str(job)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )
        try:
            self._answer()  # {"ready": true} once DyNet is loaded and the model built
            # it runs only when called: the thread rule must not count it as load
            threads.take_turns(self.proc.pid)
        except PeerFailed as e:
            self.status = f"failed: {e}"
            self.close()

    @property
    def ready(self) -> bool:
        return self.proc is not None

    def _answer(self) -> dict:
        assert self.proc is not None and self.proc.stdout is not None
        for _ in range(100):  # answers are JSON objects; skip any other line it printed
            line = self.proc.stdout.readline()
            if not line or line.startswith("{"):
                break
        try:
            return json.loads(line)
        except ValueError:
            self.proc.kill()
            self.proc.wait()
            self._err.seek(0)
            err = self._err.read()
            last = (err.strip().splitlines() or [line.strip() or "no answer"])[-1]
            raise PeerFailed(f"{self.base['system']}: {last[:200]}", self) from None

    def __call__(self) -> dict[str, float]:
        if self.proc is None:
            raise PeerFailed(f"{self.base['system']} is not running ({self.status})", self)
        try:
            self.proc.stdin.write("run\n")
            self.proc.stdin.flush()
        except OSError as e:
            raise PeerFailed(f"{self.base['system']}: {e}", self) from None
        res = self._answer()
        self._wait_idle()
        return {"total_ms": float(res["ms"]), "checksum": float(res["checksum"])}

    def _wait_idle(self, limit_s: float = 0.05) -> None:
        """Return once the worker is blocked on its input again (or after ``limit_s``):
        between its answer and that, it still runs (freeing the pass's graph, back into
        its read), and whatever is measured next would share the cores with it; the
        runtime's thread rule saw it as another busy process and ran on one thread."""
        stat = f"/proc/{self.proc.pid}/stat"
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            try:
                with open(stat) as f:
                    text = f.read()
            except OSError:
                return  # no /proc (or the process is gone: the next call says so)
            if text[text.rindex(")") + 2] not in "RD":
                return
            time.sleep(0.0002)

    def row(self, m, name: str) -> dict[str, Any]:
        """Its row from a measurement where it ran under ``name``; or, when it could not
        start, the row saying why."""
        if self.status != "ok" or m is None or name not in m.results:
            return {**self.base, "status": self.status}
        return {
            **self.base,
            "status": "ok",
            **row_fields("total_ms", m.spread(name, "total_ms")),
            **load_fields(m.load),
            "blas": "dynet (Eigen, its own kernels)",
            "checksum": m.results[name]["checksum"],
            "measured": "interleaved",
        }

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            threads.stop_taking_turns(proc.pid)
            try:
                proc.stdin.write("quit\n")
                proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            self._err.close()
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> DynetPeer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
