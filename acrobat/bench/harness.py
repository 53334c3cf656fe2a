"""Measuring configurations with the shared protocol (``acrobat.measure``): warm-up
runs, then N runs; every time is the median with its spread (``*_q1_ms``, ``*_q3_ms``,
``*_min_ms``, ``*_max_ms``), and every row records the machine's load (``load_avg``,
``cpu_busy``, ``other_busy``) and the BLAS that ran with its threads (``blas``,
``blas_threads``, ``threads``: the policy's reason, and
``OPENBLAS_NUM_THREADS`` as set in the environment, ``""`` when unset), and for acrobat
rows the native kernel's state (``native``, :func:`acrobat.native.status`), which host
program recorded (``host_code``: the compiled one, ``"c"``, from the first run of a
configuration unless ``ACROBAT_HOST_C`` says otherwise: the steady state a user's repeated
runs reach) and what compiling or loading the process's JIT parts and the configuration's
host program cost (``jit_ms``, outside every timed run).

A row is a flat dict (JSON-ready). Times are milliseconds for the whole batch:
``gen_ms`` (DFG construction: the host program plus record arrays), ``sched_ms``,
``exe_ms`` (execution incl. gathers and device sync), ``total_ms`` (everything ``run``
does for the batch), ``kernel_ms`` (inside the kernel calls); ``host_share`` and
``host_us_per_launch`` as :class:`acrobat.runtime.run.RunStats` defines them (host time =
``total_ms - kernel_ms``), ``gen_sched_share`` = ``(gen_ms + sched_ms) / total_ms``. Model FLOPs count the kernels actually executed (per instance,
summed), so GFLOP/s are comparable across policies and baselines on the same inputs;
``min_bytes`` is those kernels' compulsory memory traffic (:func:`executed_bytes`). The
grid's first rows are the machine's limits, a single large SGEMM (``sgemm``, GFLOP/s) and
a large copy (``stream``, GB/s): the report's roofline.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import acrobat
from acrobat.baselines.hand_batched import HAND_BATCHED
from acrobat.baselines.measure import load_fields, measure, row_fields
from acrobat.baselines.reference import reference
from acrobat.baselines.timing import checksum, timed
from acrobat.ir.types import TensorType
from acrobat.runtime import threads as blas_threads
from acrobat.runtime.run import prepare
from acrobat.runtime.strategy import MIN_RUNS
from acrobat.trace import KernelLaunched

DEFAULT_RUNS = 7
DEFAULT_WARMUP = 2


def bench_instances(spec, batch: int, seed: int) -> list:
    """The inputs of a benchmark: ``spec.workload`` (the explorer runs the same)."""
    return spec.workload(batch, seed)


def executed_flops(prog, res) -> int:
    """FLOPs of the kernels the run executed (from the trace's launches). A twin group's
    launch (``a+b``, :mod:`acrobat.codegen.twins`) runs its members' code, whose FLOPs
    per node are the same."""
    return sum(
        prog.kernels[e.kernel.split("+")[0]].flops * e.size for e in res.trace.of(KernelLaunched)
    )


def executed_bytes(prog, res) -> int:
    """The run's compulsory memory traffic (the roofline's bytes, from the trace's
    launches): every weight its kernels read, once, and each node's tensor inputs and
    outputs once (a host argument: 8 bytes). A twin group's launch (``a+b``) reads every
    member's weights. Re-reads that miss the caches come on top; weights still cached
    from the run before can come cheaper, so the floor this gives is for cold caches."""
    per_node: dict[str, int] = {}
    weights: set[str] = set()
    total = 0
    for e in res.trace.of(KernelLaunched):
        name = e.kernel
        if name not in per_node:
            members = [prog.kernels[k] for k in name.split("+")]
            spec = members[0]
            ins = sum(ty.nbytes if isinstance(ty, TensorType) else 8 for _, ty, _ in spec.params)
            per_node[name] = ins + sum(
                ty.nbytes for ty in spec.outputs if isinstance(ty, TensorType)
            )
            weights.update(w for k in members for w in k.weights if w in prog.params)
        total += e.size * per_node[name]
    return total + sum(prog.params[w].nbytes for w in weights)


def blas_fields(stats=None) -> dict[str, Any]:
    """Which BLAS ran with how many threads: from a run's stats, else (baselines) the
    BLAS's current setting."""
    env = os.environ.get("OPENBLAS_NUM_THREADS", "")
    if stats is not None:
        return {
            "blas": stats["blas"],
            "blas_threads": stats["blas_threads"],
            "threads": stats["threads"],
            "openblas_num_threads": env,
            "native": stats["native"],
            "jit_ms": round(stats["jit_ms"], 1),
            "host_code": stats["host_code"],
        }
    b = blas_threads.blas()
    n = b.get()
    return {
        "blas": b.name,
        "blas_threads": n,
        "threads": "BLAS default",
        "openblas_num_threads": env,
        "native": "",
        "jit_ms": 0.0,
        "host_code": "",
    }


@dataclass
class Case:
    """One configuration ready to measure: ``fn`` runs it once; ``row(m, name)`` makes its
    row from a :class:`~acrobat.baselines.measure.Measurement` where it was measured under
    ``name`` (alone, or interleaved with the other configurations of a grid row)."""

    fn: Callable[[], Any]
    row: Callable[[Any, str], dict[str, Any]]
    metrics: tuple[str, ...] | None = None


ACROBAT_METRICS = (
    "gen_ms",
    "sched_ms",
    "exe_ms",
    "total_ms",
    "kernel_ms",
    "host_share",  # as RunStats defines them: host = total - kernel time
    "host_us_per_launch",
)


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
    threads: int | None = None,
    strategy: str = "auto",
) -> dict[str, Any]:
    """One acrobat configuration -> one row (``threads``, ``strategy``: as
    ``acrobat.run``'s)."""
    case = acrobat_case(
        model, size, batch, policy, backend, disable, seed, decisions, threads, strategy
    )
    m = measure({"run": case.fn}, repeats=runs, warmup=warmup, metrics=case.metrics)
    return case.row(m, "run")


def acrobat_case(
    model: str,
    size: str,
    batch: int,
    policy: str,
    backend: str = "numpy",
    disable: tuple[str, ...] = (),
    seed: int = 0,
    decisions: str = "tensor",
    threads: int | None = None,
    strategy: str = "auto",
) -> Case:
    """An acrobat configuration compiled, run once traced (FLOPs, schedule facts,
    checksum) and ready to measure."""
    spec = acrobat.models.load(model, size, decisions=decisions)
    xs = bench_instances(spec, batch, seed)
    t = time.perf_counter()
    prog = acrobat.compile(spec.module, spec.params, acrobat.CompileOptions().without(*disable))
    compile_ms = (time.perf_counter() - t) * 1e3
    if "ACROBAT_HOST_C" not in os.environ:  # the compiled host program from the first run
        prepare(prog, backend).host_c_mode = "1"  # (its build is outside every timed run)
    res = acrobat.run(  # for FLOPs (traced: batched unless strategy="direct")
        prog, xs, policy=policy, backend=backend, threads=threads, strategy=strategy
    )
    flops = executed_flops(prog, res)
    min_bytes = executed_bytes(prog, res)
    metrics = ACROBAT_METRICS
    ran: list[str] = []  # the strategy of every run (auto may re-measure the other)
    settle = settle_strategy(prog, xs, policy, backend, threads, strategy)

    def one_run():
        st = acrobat.run(
            prog,
            xs,
            policy=policy,
            backend=backend,
            trace_level="off",
            threads=threads,
            strategy=strategy,
        ).stats
        ran.append(st["strategy"])
        return st

    def make_row(m, name: str) -> dict[str, Any]:
        counts = Counter(ran[-m.repeats :])  # the measured runs (warm-ups excluded)
        st = m.results[name]
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
            "runs": m.repeats,
            "compile_ms": compile_ms,
            "settle_runs": settle,
        }
        for k in metrics:
            row.update(row_fields(k, m.spread(name, k)))
        row.update(load_fields(m.load), **blas_fields(st))
        # the schedule's facts from the traced run (batched unless strategy="direct" was
        # forced): a measured run may have been direct, whose "launches" are kernel calls
        sched = res.stats
        row.update(
            launches=sched["launches"],
            nodes=sched["nodes"],
            mean_batch=sched["mean_batch"],
            lower_bound=sched["lower_bound"],
            passes=sched["passes"],
            peak_bytes=sched["peak_arena_bytes"],
            flops=flops,
            min_bytes=min_bytes,
            gflops=flops / (row["total_ms"] * 1e6) if row["total_ms"] else 0.0,
            gen_sched_share=(row["gen_ms"] + row["sched_ms"]) / row["total_ms"]
            if row["total_ms"]
            else 0.0,
            checksum=checksum(res.outputs),  # the traced run's outputs (same inputs)
            # what strategy="auto" ran most in the measured runs, how often each, and why
            strategy=counts.most_common(1)[0][0],
            strategy_runs=", ".join(f"{k} {n}" for k, n in counts.most_common()),
            strategy_reason=st["strategy_reason"],
        )
        return row

    return Case(one_run, make_row, metrics)


def settle_strategy(prog, xs, policy, backend, threads, strategy) -> int:
    """Untraced runs until ``strategy="auto"`` has measured both strategies at this batch
    size (its exploration, a one-time cost per program and batch size, like a warm-up);
    returns how many it took (0 when nothing is chosen: another strategy or policy)."""
    chooser = prepare(prog, backend).chooser
    if (
        strategy != "auto"
        or chooser.choose(strategy, policy, backend, "off", None, len(xs))[2] is None
    ):
        return 0
    done = 0
    while not chooser.settled(len(xs)) and done < 2 * MIN_RUNS + 2:
        acrobat.run(prog, xs, policy=policy, backend=backend, trace_level="off", threads=threads)
        done += 1
    return done


def run_baseline(
    kind: str, model: str, size: str, batch: int, runs: int, warmup: int, seed: int = 0
) -> dict[str, Any] | None:
    """``eager-numpy`` (the per-instance references) or ``hand-batched`` NumPy."""
    case = baseline_case(kind, model, size, batch, seed)
    if case is None:
        return None
    return case.row(measure({"run": case.fn}, repeats=runs, warmup=warmup), "run")


def baseline_case(kind: str, model: str, size: str, batch: int, seed: int = 0) -> Case | None:
    """A NumPy baseline ready to measure (None: the model has no such baseline)."""
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

    def make_row(m, name: str) -> dict[str, Any]:
        return {
            "system": kind,
            "model": model,
            "size": size,
            "batch": batch,
            "policy": "-",
            "backend": "numpy",
            "seed": seed,
            "runs": m.repeats,
            **row_fields("total_ms", m.spread(name)),
            **load_fields(m.load),
            **blas_fields(),
            "checksum": checksum(m.results[name]),
        }

    return Case(fn, make_row)


def _limit_row(system: str, size: str, fn: Callable[[], Any], runs: int, **rate) -> dict:
    """A row of one of the machine's limits: ``fn``'s median time over ``runs`` (after one
    warm-up), and ``rate``, one keyword: the rate's name and the work of one call (FLOPs,
    bytes), given as billions a second (GFLOP/s, GB/s)."""
    times, _ = timed(fn, runs, 1)
    ms = statistics.median(times)
    ((name, work),) = rate.items()
    return {
        "system": system,
        "model": "-",
        "size": size,
        "batch": 0,
        "policy": "-",
        "total_ms": ms,
        name: work / (ms * 1e6),
    }


def sgemm_limit(n: int = 2048, runs: int = 5) -> dict[str, Any]:
    """The machine's single large SGEMM rate: the physical limit line."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    return _limit_row("sgemm", f"{n}^3", lambda: a @ a, runs, gflops=2 * n**3)


def stream_limit(mib: int = 256, runs: int = 5) -> dict[str, Any]:
    """The machine's memory bandwidth as one thread's copy of ``mib`` MiB sees it (bytes
    read plus bytes written, per second): the roofline's other line."""
    a = np.ones(mib * 2**20 // 4, np.float32)
    b = np.empty_like(a)
    return _limit_row("stream", f"copy {mib} MiB", lambda: np.copyto(b, a), runs, gbps=2 * a.nbytes)


def finite(row: dict[str, Any]) -> bool:
    """Every number in the row is finite."""
    return all(
        math.isfinite(v)
        for v in row.values()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    )
