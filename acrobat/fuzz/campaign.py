"""A fuzzing campaign: generate, check, shrink and save, with coverage and throughput.

One *case* is a pure function of a choice sequence: the generator draws a program, then
a batch of instances for it, from one :class:`~acrobat.fuzz.choices.ChoiceSource`. A
failing case is shrunk on its choice sequence (same failure signature required) and
saved as a JSON case file that the test suite re-checks from then on.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import acrobat
from acrobat.errors import AcrobatError
from acrobat.fuzz.cases import Case, save
from acrobat.fuzz.check import CheckResult, Failure, check_program
from acrobat.fuzz.choices import ChoiceSource, Exhausted, shrink
from acrobat.fuzz.generate import generate_instances, generate_program
from acrobat.fuzz.reduce import reduce_source
from acrobat.ir.nodes import OpCall
from acrobat.ir.ops import REGISTRY
from acrobat.ir.traversal import walk

CASE_SECONDS = 60.0
"""A case that runs longer than this is counted as slow and skipped (not a failure)."""


class CaseTimeout(BaseException):
    """A case ran past :data:`CASE_SECONDS` (a BaseException, like KeyboardInterrupt, so
    the checker's ``except Exception`` does not take it for a failure of the program)."""


@dataclass
class Drawn:
    """A generated case: the program, the instances and the choices that made them."""

    source: str
    instances: list
    features: frozenset[str]
    choices: list[int]
    ops: frozenset[str] = frozenset()


def draw_case(src: ChoiceSource, max_batch: int = 6) -> Drawn:
    """A program and a batch of 1..``max_batch`` instances from ``src``."""
    program = generate_program(src)
    module = acrobat.parse(program.source)
    n = src.integer(1, max_batch)
    instances = generate_instances(module, src, n)
    ops = frozenset(e.op for f in module.functions for e in walk(f.body) if isinstance(e, OpCall))
    return Drawn(program.source, instances, program.features, list(src.choices), ops)


@dataclass
class Report:
    """What a campaign did: counts, coverage, failures (with the saved case files)."""

    programs: int = 0
    runs: int = 0
    slow_seeds: list[int] = field(default_factory=list)  # ChoiceSource seeds of slow cases
    rejected: int = 0
    reference_errors: int = 0
    seconds: float = 0.0
    features: Counter = field(default_factory=Counter)
    ops: Counter = field(default_factory=Counter)
    failures: list[tuple[Failure, Path | None]] = field(default_factory=list)

    @property
    def slow(self) -> int:
        return len(self.slow_seeds)

    def missing_ops(self) -> list[str]:
        """Registered user-facing ops no generated program used."""
        internal = {"ghost"}
        return sorted(set(REGISTRY) - set(self.ops) - internal)

    def summary(self) -> str:
        rate = self.programs / self.seconds if self.seconds else 0.0
        n_ops = len(REGISTRY) - 1  # ghost is internal
        return (
            f"fuzz: {self.programs} programs, {self.runs} batched runs, "
            f"{len(self.failures)} failures, {self.slow} slow, {rate:.2f} programs/s, "
            f"ops {n_ops - len(self.missing_ops())}/{n_ops}, {len(self.features)} features"
        )


def _with_deadline(seconds: float, fn: Callable[[], CheckResult]) -> CheckResult:
    """``fn()``, or :class:`CaseTimeout` after ``seconds`` (main thread on Unix only)."""
    if not hasattr(signal, "SIGALRM"):
        return fn()

    fired = []

    def expire(signum, frame):
        fired.append(True)
        raise CaseTimeout

    old = signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        result = fn()
    except BaseException:
        if fired:  # C code (ast.parse, say) may turn the interruption into another error
            raise CaseTimeout from None
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if fired:  # the checker caught the interruption and reported it as the program's
        raise CaseTimeout
    return result


def check_choices(choices: list[int], **check_args) -> tuple[Drawn | None, CheckResult | None]:
    """Replay ``choices`` into a case and check it (``None``s when it cannot be drawn)."""
    try:
        drawn = draw_case(ChoiceSource(prefix=choices))
    except (Exhausted, AcrobatError):
        return None, None
    result = _with_deadline(
        CASE_SECONDS, lambda: check_program(drawn.source, drawn.instances, **check_args)
    )
    return drawn, result


def minimize(drawn: Drawn, failure: Failure, budget: int = 300) -> Drawn:
    """The smallest case (by choice sequence) that still fails with ``failure``'s signature."""
    want = failure.signature()

    def still_fails(choices: list[int]) -> bool:
        try:
            _, result = check_choices(choices)
        except CaseTimeout:
            return False
        return result is not None and any(f.signature() == want for f in result.failures)

    best = shrink(drawn.choices, still_fails, budget=budget)
    smaller = draw_case(ChoiceSource(prefix=best))

    def source_still_fails(source: str) -> bool:
        try:
            result = _with_deadline(CASE_SECONDS, lambda: check_program(source, smaller.instances))
        except CaseTimeout:
            return False
        return any(f.signature() == want for f in result.failures)

    smaller.source = reduce_source(smaller.source, source_still_fails, budget=budget)
    return smaller


def run_campaign(
    seed: int,
    *,
    programs: int | None = None,
    minutes: float | None = None,
    out: Path | None = None,
    shrink_budget: int = 300,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    """Fuzz until ``programs`` cases or ``minutes`` have passed (whichever comes first)."""
    report = Report()
    t0 = time.perf_counter()
    deadline = t0 + minutes * 60 if minutes is not None else None
    i = 0
    while (programs is None or i < programs) and (
        deadline is None or time.perf_counter() < deadline
    ):
        case_seed = seed * 1_000_003 + i
        src = ChoiceSource(seed=case_seed)
        i += 1
        try:
            drawn = draw_case(src)
        except Exhausted:
            report.slow_seeds.append(case_seed)
            continue
        except Exception as err:  # noqa: BLE001 - the generator or the frontend broke
            kind = "rejected" if isinstance(err, AcrobatError) else "untyped"
            report.rejected += kind == "rejected"
            failure = Failure(kind, "generate/parse", f"{type(err).__name__}: {err}"[:500])
            path = None
            if out is not None:
                program = generate_program(ChoiceSource(prefix=src.choices))
                name = f"fuzz_s{seed}_{i - 1}_{kind}"
                path = save(Case(name, program.source, [], str(failure)), out)
            report.failures.append((failure, path))
            continue
        try:
            result = _with_deadline(
                CASE_SECONDS, lambda d=drawn: check_program(d.source, d.instances)
            )
        except CaseTimeout:
            report.slow_seeds.append(case_seed)
            continue
        report.programs += 1
        report.runs += result.runs
        report.reference_errors += result.reference_errors
        report.features.update(drawn.features)
        report.ops.update(drawn.ops)
        if not result.ok:
            failure = result.failures[0]
            small = minimize(drawn, failure, shrink_budget)
            path = None
            if out is not None:
                name = f"fuzz_s{seed}_{i - 1}_{failure.kind}"
                path = save(Case(name, small.source, small.instances, str(failure)), out)
            report.failures.append((failure, path))
        report.seconds = time.perf_counter() - t0
        if progress is not None:
            progress(report)
    report.seconds = time.perf_counter() - t0
    return report
