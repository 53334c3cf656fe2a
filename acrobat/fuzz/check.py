"""The differential check: batched runs against the per-instance reference interpreter.

For one program and one batch of instances, :func:`check_program` runs
``acrobat.evaluate`` on each instance, then ``acrobat.compile`` + ``acrobat.run`` for every
policy, for the default options and for each optimization switched off, on the numpy
backend (values) and the null backend (shapes and launch counts), and once more with the
direct strategy (each instance straight through, no batching), and, where the program
has one, with its compiled host program (:mod:`acrobat.codegen.host_c`) against the
Python one (same values or errors, same DFG). The contract:

* if every instance evaluates, every batched run succeeds with outputs equal to the
  reference within :data:`RTOL`/:data:`ATOL` (NaN equals NaN), and the null backend
  gives outputs of the same structure and shapes with the same launch count as numpy
  (programs that read tensors to the host are skipped there: their control flow reads
  the zeros the null backend computes);
* if some instances raise a typed error (:class:`acrobat.AcrobatError`) in the reference,
  every batched run raises an :class:`acrobat.InstanceError` whose ``index`` is one of
  those instances;
* ``acrobat.gap_report`` works on the program (default options) and, where the program
  reads no tensors, its launch totals are the runs' (:func:`_check_gap`);
* an untyped exception anywhere (frontend, compiler, runtime, or the interpreter itself)
  is a failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import acrobat
from acrobat.errors import AcrobatError, InstanceError
from acrobat.passes.options import OPT_IN, OPTIMIZATIONS, CompileOptions
from acrobat.runtime.run import prepare
from acrobat.runtime.schedule import policy_names

RTOL = 1e-3
ATOL = 1e-4
"""Tolerances of the value comparison (float32 kernels batched in another order)."""

OPTION_SETS: tuple[tuple[str, CompileOptions], ...] = (
    (("default", CompileOptions()),)
    + tuple((f"no-{name}", CompileOptions().without(name)) for name in OPTIMIZATIONS)
    + tuple((name, CompileOptions().with_(name)) for name in OPT_IN)
)


@dataclass(frozen=True)
class Failure:
    """One way a program broke the contract.

    ``kind``: ``rejected`` (the frontend refused a generated program), ``reference`` (the
    interpreter raised an untyped exception), ``compile`` / ``untyped`` (an untyped
    exception from the compiler or a batched run), ``mismatch`` (different values, or a
    run that failed where the reference did not, or the other way round), ``shapes``
    (the null backend disagrees with numpy), ``host-c`` (the C host program disagrees
    with the Python one), ``gap`` (``acrobat.gap_report`` raised or miscounted)."""

    kind: str
    where: str
    detail: str

    def signature(self) -> str:
        """What a shrunk program must still show to count as the same failure."""
        return self.kind + ":" + self.detail.split(":", 1)[0]

    def __str__(self) -> str:
        return f"{self.kind} [{self.where}]: {self.detail}"


@dataclass
class CheckResult:
    """What one check found, and what it exercised."""

    failures: list[Failure] = field(default_factory=list)
    runs: int = 0
    reference_errors: int = 0  # instances the interpreter refused with a typed error
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:500]


def _structure(v: Any) -> Any:
    """A value with every tensor replaced by its shape (what the null backend can match)."""
    if isinstance(v, np.ndarray):
        return ("tensor", v.shape)
    if isinstance(v, tuple):
        return tuple(_structure(x) for x in v)
    if isinstance(v, acrobat.AdtValue):
        return (v.ctor, tuple(_structure(x) for x in v.fields))
    return ("host", type(v).__name__)


def reference(module, params, instances) -> tuple[list, list[Failure]]:
    """``("ok", value)`` or ``("error", message)`` per instance, plus untyped failures."""
    out, failures = [], []
    for i, x in enumerate(instances):
        try:
            out.append(("ok", acrobat.evaluate(module, x, params)))
        except AcrobatError as err:
            out.append(("error", _describe(err)))
        except Exception as err:  # noqa: BLE001 - an untyped error is what we look for
            out.append(("error", _describe(err)))
            failures.append(Failure("reference", f"instance {i}", _describe(err)))
    return out, failures


def _compare(refs, res, where: str) -> Failure | None:
    for i, ((status, want), got) in enumerate(zip(refs, res.outputs)):
        if status != "ok":
            return Failure("mismatch", where, f"run succeeded; reference raised on instance {i}")
        if not acrobat.values_equal(got, want, rtol=RTOL, atol=ATOL):
            return Failure("mismatch", where, f"values differ on instance {i}")
    return None


def _run_one(
    prog, instances, refs, policy, backend, where, strategy="batched"
) -> tuple[Any, Failure | None]:
    failing = {i for i, (status, _) in enumerate(refs) if status != "ok"}
    try:
        res = acrobat.run(prog, instances, policy, backend, trace_level="off", strategy=strategy)
    except InstanceError as err:
        if err.index in failing:
            return None, None
        return None, Failure(
            "mismatch",
            where,
            f"run raised for instance {err.index}; reference failed on {sorted(failing)}: "
            f"{_describe(err)}",
        )
    except AcrobatError as err:
        return None, Failure(
            "mismatch", where, f"typed error without an instance: {_describe(err)}"
        )
    except Exception as err:  # noqa: BLE001
        return None, Failure("untyped", where, _describe(err))
    if backend == "numpy":
        return res, _compare(refs, res, where)
    return res, None


def _check_host_c(prog, instances, refs, where: str) -> Failure | None:
    """The compiled host program against the Python one: the acrobat policy's run with
    each (the C one built now) must give the reference's values and errors and the same
    DFG (nodes and launches). Nothing to check for a program that stays Python, or on an
    engine that runs no compiled host program (the reference engine)."""
    if prog.host_program.c_source is None:
        return None
    runtime = prepare(prog, "numpy")
    if runtime.engine.host_c is None:
        return None
    old = runtime.host_c_mode
    try:
        runtime.host_c_mode = "0"
        py, fail = _run_one(prog, instances, refs, "acrobat", "numpy", where + " (python)")
        if fail is not None:
            return fail
        runtime.host_c_mode = "1"
        res, fail = _run_one(prog, instances, refs, "acrobat", "numpy", where)
    finally:
        runtime.host_c_mode = old
    if fail is not None or py is None or res is None:
        return fail  # both raised the reference's error (or the C run's failure)
    code = res.stats.host_code
    if code != "c" and "the c run stopped" not in code and "no C build" not in code:
        return Failure("host-c", where, f"the C program did not run: {code}")
    for key in ("nodes", "launches"):
        if res.stats[key] != py.stats[key]:
            return Failure(
                "host-c", where, f"{key}: {res.stats[key]} with C, {py.stats[key]} with Python"
            )
    return None


def _check_gap(prog, instances, launches: dict[str, int], where: str) -> Failure | None:
    """``acrobat.gap_report`` on the program: it must not raise, and (a program that
    reads no tensors: one DFG per run) its totals per policy are the runs' launches."""
    try:
        rep = acrobat.gap_report(prog, instances)
    except Exception as err:  # noqa: BLE001 - the report must work wherever the run does
        return Failure("gap", where, _describe(err))
    if prog.taint.fiber_functions:
        return None
    for policy, n in launches.items():
        if rep.launches.get(policy, n) != n:
            return Failure("gap", where, f"{policy}: report {rep.launches[policy]}, run {n}")
    return None


def check_program(
    source: str,
    instances: list,
    *,
    policies: tuple[str, ...] | None = None,
    option_sets: tuple[tuple[str, CompileOptions], ...] = OPTION_SETS,
    null_backend: bool = True,
    seed: int = 0,
    stop_at_first: bool = True,
    host_c: bool = True,
) -> CheckResult:
    """Check one program on one batch under every policy and option set (see module doc);
    ``policies`` defaults to every registered one. ``host_c``: also run the compiled host
    program (:mod:`acrobat.codegen.host_c`; default and opt-in option sets)."""
    t0 = time.perf_counter()
    result = CheckResult()
    try:
        module = acrobat.parse(source)
    except AcrobatError as err:
        result.failures.append(Failure("rejected", "parse", _describe(err)))
        return result
    except Exception as err:  # noqa: BLE001
        result.failures.append(Failure("untyped", "parse", _describe(err)))
        return result
    params = acrobat.init_params(module, seed)
    refs, failures = reference(module, params, instances)
    result.failures += failures
    result.reference_errors = sum(status != "ok" for status, _ in refs)
    all_ok = result.reference_errors == 0
    for opt_name, options in option_sets:
        try:
            prog = acrobat.compile(module, params, options=options)
        except Exception as err:  # noqa: BLE001 - a well-typed program must compile
            result.failures.append(Failure("compile", opt_name, _describe(err)))
            if stop_at_first:
                break
            continue
        reads = bool(prog.taint.fiber_functions)
        launches: dict[str, int] = {}
        for policy in policies if policies is not None else policy_names():
            where = f"{policy}, {opt_name}"
            res, fail = _run_one(prog, instances, refs, policy, "numpy", where)
            result.runs += 1
            if res is not None:
                launches[policy] = res.stats["launches"]
            if fail is None and res is not None and null_backend and all_ok and not reads:
                null, fail = _run_one(prog, instances, refs, policy, "null", where + ", null")
                result.runs += 1
                if fail is None and (
                    [_structure(y) for y in null.outputs] != [_structure(y) for y in res.outputs]
                    or null.stats["launches"] != res.stats["launches"]
                ):
                    fail = Failure("shapes", where + ", null", "null backend differs from numpy")
            if fail is not None:
                result.failures.append(fail)
                if stop_at_first:
                    result.seconds = time.perf_counter() - t0
                    return result
        if all_ok and opt_name == "default":
            fail = _check_gap(prog, instances, launches, f"gap report, {opt_name}")
            result.runs += 1
            if fail is not None:
                result.failures.append(fail)
                if stop_at_first:
                    break
        if host_c and (opt_name == "default" or opt_name in OPT_IN):
            fail = _check_host_c(prog, instances, refs, f"c host program, {opt_name}")
            result.runs += 1
            if fail is not None:
                result.failures.append(fail)
                if stop_at_first:
                    break
        where = f"direct, {opt_name}"
        _, fail = _run_one(prog, instances, refs, "acrobat", "numpy", where, "direct")
        result.runs += 1
        if fail is not None:
            result.failures.append(fail)
            if stop_at_first:
                break
    result.seconds = time.perf_counter() - t0
    return result
