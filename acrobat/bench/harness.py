"""Measuring one configuration: warm-up runs, then the median of N runs (with min/max).

A row is a flat dict (JSON-ready). Times are milliseconds for the whole batch:
``gen_ms`` (DFG construction: the host program plus record arrays), ``sched_ms``,
``exe_ms`` (execution incl. gathers and device sync), ``total_ms`` (everything ``run``
does for the batch), ``kernel_ms`` (inside the kernel calls); ``host_share`` and
``host_us_per_launch`` as :class:`acrobat.runtime.run.RunStats` defines them (host time =
``total_ms - kernel_ms``), ``gen_sched_share`` = ``(gen_ms + sched_ms) / total_ms``. Model FLOPs count the kernels actually executed (per instance,
summed), so GFLOP/s are comparable across policies and baselines on the same inputs.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import numpy as np

import acrobat
from acrobat.baselines.hand_batched import HAND_BATCHED
from acrobat.baselines.reference import reference
from acrobat.baselines.timing import checksum, summarize, timed
from acrobat.models import data
from acrobat.trace import KernelLaunched

DEFAULT_RUNS = 7
DEFAULT_WARMUP = 2


def bench_instances(spec, batch: int, seed: int) -> list:
    """The inputs of a benchmark: the model's default data, except TreeLSTM and MV-RNN,
    which use random binary trees of 10..60 leaves (the shape of the DyNet comparison)."""
    if spec.name in ("treelstm", "mvrnn"):
        rng = np.random.default_rng(seed)
        return [data.random_tree(rng, spec.sizes["V"]) for _ in range(batch)]
    return spec.instances(batch, seed)


def executed_flops(prog, res) -> int:
    """FLOPs of the kernels the run executed (from the trace's launches)."""
    return sum(prog.kernels[e.kernel].flops * e.size for e in res.trace.of(KernelLaunched))


def run_acrobat(
    model: str,
    size: str,
    batch: int,
    policy: str,
    backend: str = "numpy",
    disable: tuple[str, ...] = (),
    runs: int = DEFAULT_RUNS,
    warmup: int = DEFAULT_WARMUP,
    seed: int = 0,
    decisions: str = "tensor",
) -> dict[str, Any]:
    """One acrobat configuration -> one row."""
    spec = acrobat.models.load(model, size, decisions=decisions)
    xs = bench_instances(spec, batch, seed)
    t = time.perf_counter()
    prog = acrobat.compile(spec.module, spec.params, acrobat.CompileOptions().without(*disable))
    compile_ms = (time.perf_counter() - t) * 1e3
    res = acrobat.run(prog, xs, policy=policy, backend=backend)  # traced once, for FLOPs
    flops = executed_flops(prog, res)
    samples: dict[str, list[float]] = {
        k: [] for k in ("gen_ms", "sched_ms", "exe_ms", "total_ms", "kernel_ms")
    }
    host: dict[str, list[float]] = {k: [] for k in ("host_share", "host_us_per_launch")}
    for i in range(warmup + runs):
        res = acrobat.run(prog, xs, policy=policy, backend=backend, trace_level="off")
        if i >= warmup:
            for k in samples:
                samples[k].append(res.stats[k])
            for k in host:
                host[k].append(res.stats[k])
    row: dict[str, Any] = {
        "system": "acrobat",
        "model": model,
        "size": size,
        "batch": batch,
        "policy": policy,
        "backend": backend,
        "disabled": ",".join(disable),
        "decisions": decisions,
        "seed": seed,
        "runs": runs,
        "compile_ms": compile_ms,
    }
    for k, v in samples.items():
        s = summarize(v)
        row[k] = s["median"]
        row[k.replace("_ms", "_min_ms")] = s["min"]
        row[k.replace("_ms", "_max_ms")] = s["max"]
    for k, v in host.items():  # as RunStats defines them: host = total - kernel time
        s = summarize(v)
        row[k], row[k + "_min"], row[k + "_max"] = s["median"], s["min"], s["max"]
    st = res.stats
    row.update(
        launches=st["launches"],
        nodes=st["nodes"],
        mean_batch=st["mean_batch"],
        lower_bound=st["lower_bound"],
        passes=st["passes"],
        peak_bytes=st["peak_arena_bytes"],
        flops=flops,
        gflops=flops / (row["total_ms"] * 1e6) if row["total_ms"] else 0.0,
        gen_sched_share=(row["gen_ms"] + row["sched_ms"]) / row["total_ms"]
        if row["total_ms"]
        else 0.0,
        checksum=checksum(res.outputs),
    )
    return row


def run_baseline(
    kind: str, model: str, size: str, batch: int, runs: int, warmup: int, seed: int = 0
) -> dict[str, Any] | None:
    """``eager-numpy`` (the per-instance references) or ``hand-batched`` NumPy."""
    spec = acrobat.models.load(model, size)
    xs = bench_instances(spec, batch, seed)
    if kind == "eager-numpy":

        def fn():
            return [reference(model, spec.params, x, spec.sizes, "tensor") for x in xs]
    elif kind == "hand-batched":
        if model not in HAND_BATCHED:
            return None

        def fn():
            return HAND_BATCHED[model](spec.params, xs)
    else:
        raise ValueError(kind)
    times, out = timed(fn, runs, warmup)
    s = summarize(times)
    return {
        "system": kind,
        "model": model,
        "size": size,
        "batch": batch,
        "policy": "-",
        "backend": "numpy",
        "seed": seed,
        "runs": runs,
        "total_ms": s["median"],
        "total_min_ms": s["min"],
        "total_max_ms": s["max"],
        "checksum": checksum(out),
    }


def sgemm_limit(n: int = 2048, runs: int = 5) -> dict[str, Any]:
    """The machine's single large SGEMM rate: the physical limit line."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    times, _ = timed(lambda: a @ a, runs, 1)
    ms = statistics.median(times)
    return {
        "system": "sgemm",
        "model": "-",
        "size": f"{n}^3",
        "batch": 0,
        "policy": "-",
        "total_ms": ms,
        "gflops": 2 * n**3 / (ms * 1e6),
    }


def finite(row: dict[str, Any]) -> bool:
    """Every number in the row is finite."""
    return all(
        math.isfinite(v)
        for v in row.values()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    )
