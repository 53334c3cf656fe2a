"""Which strategy runs a batch: ``batched`` (records, DFG, schedule, batched kernels) or
``direct`` (each instance straight through, kernels called at once: :mod:`acrobat.runtime.direct`).

``acrobat.run(..., strategy=...)`` takes ``"batched"``, ``"direct"`` or ``"auto"`` (the
default). Batching pays when batches are large enough to amortize its per-launch work
(recording, scheduling, gathers); with few small instances a straight per-instance
program is faster. How large is large enough depends on the program, its sizes, the
instances' shapes and this machine, so ``auto`` measures instead of guessing.

**The rule of ``auto``** (one :class:`StrategyChooser` per prepared program and backend):

* ``auto`` chooses only for untraced runs (``trace_level="off"``) of the ``acrobat``
  policy on the NumPy backend without a ``memory_limit``; otherwise it runs batched and
  says why: the other policies are ways of batching; ``memory_limit`` bounds the batched
  path's arenas; a traced run is there to show the batched execution (its batches,
  launches and timeline), and tracing costs the batched path per launch, so traced
  timings cannot say which strategy is faster. ``strategy="direct"`` runs direct at any
  trace level.
* Runs are grouped by batch size (ranges 1, 2-3, 4-7, 8-15, ...). In a group, ``auto``
  runs batched until batched has one measured run, then direct once,
  then whichever took less time per kernel call (per DFG node: the same count for both
  strategies, so batches of different instances compare fairly), by the best run of
  each. The program's first run of all is a warm-up (arenas grow, caches fill) and is
  not measured.
* Every run, forced ones included, adds its time to its group.

``RunStats.strategy`` says which ran and ``RunStats.strategy_reason`` why, in one
sentence (also in the trace's ``RunSummary``).
"""

from __future__ import annotations

from acrobat.errors import AcrobatNameError

STRATEGIES = ("auto", "batched", "direct")

Group = int  # the lowest batch size of a range of batch sizes


def _group_name(lo: int) -> str:
    hi = 2 * lo - 1
    return f"batch size {lo}" if lo == hi else f"batch sizes {lo}-{hi}"


class StrategyChooser:
    """The measured cost of each strategy, per batch-size range (untraced runs)."""

    def __init__(self) -> None:
        self.warmed = False  # the first run of all is not measured
        self.best: dict[Group, dict[str, float]] = {}  # ms per kernel call, best run

    @staticmethod
    def check(strategy: str) -> None:
        if strategy not in STRATEGIES:
            raise AcrobatNameError(
                f"unknown strategy {strategy!r}", hint=f"choose one of {STRATEGIES}"
            )

    def choose(
        self,
        strategy: str,
        policy: str,
        backend: str,
        trace_level: str,
        memory_limit: int | None,
        n: int,
    ) -> tuple[str, str, Group | None]:
        """``(strategy, reason, group)``: the strategy to run, the one-sentence reason,
        and the group the run's time counts in (None: not comparable, not kept)."""
        self.check(strategy)
        group = None
        if policy == "acrobat" and backend == "numpy" and memory_limit is None and n:
            group = 1 << (n.bit_length() - 1) if trace_level == "off" else None
        if strategy != "auto":
            return strategy, f"strategy={strategy!r} was asked for", group
        if group is None:
            return "batched", _why_batched(policy, backend, trace_level, memory_limit, n), None
        where = _group_name(group)
        if not self.warmed:
            return "batched", "auto: the program's first run (a warm-up, not measured)", group
        best = self.best.get(group, {})
        b, d = best.get("batched"), best.get("direct")
        if b is None:
            return "batched", f"auto: measuring batched at {where}", group
        if d is None:
            return (
                "direct",
                f"auto: measuring direct once at {where} (batched: {b * 1e3:.1f} us per kernel call)",
                group,
            )
        win, lose = ("direct", "batched") if d < b else ("batched", "direct")
        return (
            win,
            f"auto: {win} took {best[win] * 1e3:.1f} us per kernel call vs {best[lose] * 1e3:.1f} "
            f"for {lose} at {where} (best measured run of each)",
            group,
        )

    def observe(self, group: Group | None, strategy: str, total_ms: float, nodes: int) -> None:
        """Count a finished run's time in its group."""
        if not self.warmed:
            self.warmed = True
            return
        if group is None:
            return
        per_call = total_ms / max(nodes, 1)
        best = self.best.setdefault(group, {})
        if per_call < best.get(strategy, float("inf")):
            best[strategy] = per_call


def _why_batched(policy: str, backend: str, trace_level: str, memory_limit, n: int) -> str:
    """Why ``auto`` did not choose (always batched then)."""
    if policy != "acrobat":
        return f"auto: the {policy!r} policy is a way of batching (auto chooses for 'acrobat')"
    if backend != "numpy":
        return f"auto: the {backend!r} backend runs batched (auto chooses on 'numpy')"
    if memory_limit is not None:
        return "auto: memory_limit bounds the batched path's arenas"
    if not n:
        return "auto: no instances"
    return (
        f"auto: a traced run (trace_level={trace_level!r}) shows the batched execution; "
        "auto measures and chooses on untraced runs (trace_level='off')"
    )


__all__ = ["STRATEGIES", "StrategyChooser"]
