"""The explorer's calls into the public facade: compile a module, run it, time both.

Only ``import acrobat`` (the public facade, `acrobat/__init__.py`) is used, never runtime or pass internals;
what comes back to the views is traces. No GUI imports.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import acrobat
from acrobat.trace import Trace

AUTO = "auto"  # acrobat.run(backend="auto"): a choice among the backends, not one of them
PROBE_SMALL, PROBE_LARGE = 2, 8  # instances in the runs that estimate a run's cost


CancelToken = acrobat.CancelToken  # a job's token: set() stops its runs mid-run
Cancelled = acrobat.RunCancelled  # the user cancelled the work in flight: raised by a run
# given the job's token (before its next launch) or by a progress hook between runs


def policy_names() -> tuple[str, ...]:
    """The registered scheduling policies (``acrobat.policies()``), in their order."""
    return tuple(p.name for p in acrobat.policies())


def backend_choices() -> tuple[str, ...]:
    """What the backend picker offers: every registered backend, then ``"auto"``."""
    return (*(b.name for b in acrobat.backends()), AUTO)


def unavailable_backends() -> dict[str, str]:
    """The backends that cannot run here, each with the reason why not."""
    return {b.name: b.reason for b in acrobat.backends() if not b.available}


def auto_backend() -> tuple[str, str]:
    """What ``backend="auto"`` runs on here, and why: the preferred backend
    (``acrobat.backends.AUTO_PREFERS``) when it can run, NumPy otherwise."""
    preferred = acrobat.backends.AUTO_PREFERS
    info = {b.name: b for b in acrobat.backends()}.get(preferred)
    if info is not None and info.available:
        return preferred, f"{preferred} can run here"
    why = info.reason if info is not None else f"{preferred} is not registered"
    return "numpy", f"{preferred} cannot run here: {why}"


def backend_note(backend: str) -> str:
    """The lines under the backend picker: which backends cannot run here and why (they are
    offered greyed out), and for ``"auto"`` what it picks."""
    lines = [f"{name}: {why}" for name, why in unavailable_backends().items()]
    if backend == AUTO:
        picked, why = auto_backend()
        lines.insert(0, f"auto runs on {picked} ({why})")
    return "\n".join(lines)


def optimization_names() -> tuple[str, ...]:
    """The switchable optimizations, by ``acrobat.CompileOptions`` field name: the switches on
    by default (the explorer compiles ``CompileOptions().without(*unchecked)``, which can switch
    these off; an opt-in option it could not switch on, so none would be offered)."""
    return tuple(s.name for s in acrobat.CompileOptions.switches() if s.default)


def optimization_label(name: str) -> str:
    """The human label of optimization ``name`` (``"Op fusion"`` for ``fusion``)."""
    return acrobat.CompileOptions.switch(name).label


def optimization_help(name: str) -> str:
    """What optimization ``name`` does, and the passes it switches (the explorer's tooltip)."""
    switch = acrobat.CompileOptions.switch(name)
    where = ", ".join(switch.passes) if switch.passes else "code generation and run time"
    return f"{switch.what} Switches: {where}. (CompileOptions.{switch.name})"


def pass_switches(pass_name: str) -> tuple[str, ...]:
    """The labels of the optimizations that switch the pass ``pass_name`` (the Passes tab)."""
    return tuple(s.label for s in acrobat.CompileOptions.switches() if pass_name in s.passes)


@dataclass(frozen=True)
class Compiled:
    """A compiled program, the trace of its passes, and how long compiling took."""

    program: Any  # acrobat.CompiledProgram
    trace: Trace
    ms: float


@dataclass(frozen=True)
class Ran:
    """One traced run (with NodeRecorded events), for the views; its times come from
    :func:`time_runs`, never from this one run."""

    policy: str
    trace: Trace


def compile_module(module, params: dict, disabled: tuple[str, ...] = ()) -> Compiled:
    """Run the pass pipeline with the named optimizations off (raises ``AcrobatError``)."""
    started = time.perf_counter()
    options = acrobat.CompileOptions().without(*disabled)
    program = acrobat.compile(module, params, options)
    return Compiled(program, program.trace, (time.perf_counter() - started) * 1000)


def run_program(compiled: Compiled, instances: list, policy: str, backend: str, cancel=None) -> Ran:
    """Run ``instances`` under ``policy`` with node-level tracing (raises ``AcrobatError``,
    or :data:`Cancelled` once ``cancel`` is set)."""
    result = acrobat.run(
        compiled.program,
        instances,
        policy=policy,
        backend=backend,
        trace_level="nodes",
        cancel=cancel,
    )
    return Ran(policy, result.trace)


@dataclass
class PlainRuns:
    """Calling it runs ``instances`` once as a plain ``acrobat.run`` call does (its default
    trace level, batches: recorded on the untraced run's path) and returns the run's
    ``stats``: what :func:`time_runs` times. Every run's trace is kept, in order, so the
    Timeline can draw one of the timed runs themselves. A run stops mid-way once
    ``cancel`` (a :data:`CancelToken`) is set."""

    compiled: Compiled
    instances: list
    policy: str
    backend: str
    traces: list = field(default_factory=list)
    cancel: Any = None

    def __call__(self) -> dict:
        result = acrobat.run(
            self.compiled.program,
            self.instances,
            policy=self.policy,
            backend=self.backend,
            cancel=self.cancel,
        )
        self.traces.append(result.trace)
        return result.stats


def run_stats(
    compiled: Compiled, instances: list, policy: str, backend: str, cancel=None
) -> PlainRuns:
    """The plain runs of ``instances`` under ``policy`` that :func:`time_runs` times."""
    return PlainRuns(compiled, instances, policy, backend, cancel=cancel)


def time_runs(
    configs: dict[str, Callable],
    repeats: int,
    warmup: int,
    on_run: Callable[[int, int], None] | None = None,
):
    """``acrobat.measure`` over ``configs``: ``warmup`` dropped rounds, then ``repeats``
    interleaved rounds; medians and spreads per configuration (an ``acrobat.Measurement``).
    ``on_run(done, total)`` reports progress and may raise :class:`Cancelled`."""
    return acrobat.measure(configs, repeats=repeats, warmup=warmup, on_run=on_run)


def probe_ms(compiled: Compiled, instances: list, policy: str, backend: str, cancel=None) -> float:
    """Estimate one plain run (``run_stats``) of all ``instances`` (CPU ms) before it: run one
    instance (untimed: it compiles the kernels), then time ``PROBE_SMALL`` and
    ``PROBE_LARGE`` instances and extend the line through them (a fixed cost plus a cost per
    instance). On the built-in models at small size this lands within about 2x of a real run
    of 64 for a few percent of its cost."""

    def timed(xs: list) -> float:
        # CPU time of this thread, not wall time: what else runs meanwhile (a browser, the
        # server drawing another page, a build) must not make the estimate swing. (BLAS
        # threads are not counted: at the probe's few instances the kernels are small.)
        started = time.thread_time()
        acrobat.run(compiled.program, xs, policy=policy, backend=backend, cancel=cancel)
        return (time.thread_time() - started) * 1000

    n = len(instances)
    timed(instances[:1])
    if n <= PROBE_LARGE:
        return timed(instances)
    small, large = timed(instances[:PROBE_SMALL]), timed(instances[:PROBE_LARGE])
    per_instance = max(0.0, (large - small) / (PROBE_LARGE - PROBE_SMALL))
    fixed = max(0.0, small - PROBE_SMALL * per_instance)
    return fixed + per_instance * n


def gap_report(compiled: Compiled, instances: list, backend: str, source: str):
    """``acrobat.gap_report``: one more batched run of ``instances``, its recorded DFGs
    scheduled by ``acrobat`` and both DyNet policies, per kernel against its lower bound."""
    return acrobat.gap_report(compiled.program, instances, backend=backend, source=source)


def load_spec(model: str, size: str):
    """The built-in model at ``size``: source, module, seeded weights, instance generator."""
    return acrobat.models.load(model, size)


def fresh_params(module) -> dict:
    """Seeded weights for every ``Param`` of an edited program."""
    return acrobat.init_params(module, seed=0)


def reproduce_command(
    model: str,
    size: str,
    batch: int,
    seed: int,
    policy: str,
    backend: str,
    disabled: tuple[str, ...],
    runs: int,
    warmup: int,
) -> str:
    """The ``python -m acrobat.bench run`` command that runs what the explorer ran: the same
    program, options, policy and workload (``ModelSpec.workload``), so the same nodes and
    launches, and times taken the same way (``runs`` timed after ``warmup`` dropped)."""
    words = ["python", "-m", "acrobat.bench", "run", "--model", model, "--size", size]
    words += ["--batch", str(batch), "--seed", str(seed), "--policy", policy]
    words += ["--backend", backend, "--runs", str(runs), "--warmup", str(warmup)]
    if disabled:
        words += ["--disable", *disabled]
    return shlex.join(words)
