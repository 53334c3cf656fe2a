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
  launches and timeline: to time exactly what a trace shows, time traced runs, which take
  the untraced path and cost little more, see :mod:`acrobat.runtime.flushlog`).
  ``strategy="direct"`` runs direct at any trace level.
* Runs are grouped by batch size (ranges 1, 2-3, 4-7, 8-15, ...); a run's cost is its
  time per kernel call (per DFG node: the same count for both strategies, so batches of
  different instances compare fairly). The program's first run of all is a warm-up
  (arenas grow, caches fill) and is not measured.
* Measuring: in a group, ``auto`` alternates (batched first) until each strategy has
  :data:`MIN_RUNS` measured runs, so one cold or disturbed run cannot decide alone.
* Choosing: then it runs the strategy whose cost is lower, a strategy's cost being the
  best of its last :data:`WINDOW` measured runs (the best, because disturbances only
  ever slow a run down; the last few, so that a lasting change of the machine's load is
  seen once those runs are out of the window). Once a choice is made, the loser runs
  rarely, so only its runs made since the winner's oldest run in the window count: when
  the whole machine slows down, the loser's fast old runs must not beat the winner's slow
  recent ones. (Seen in a grid run on a machine that had slowed by about a third: BiRNN
  small b8 ran direct in 3 of 5 timed runs although direct is 1.2-1.3x slower there.)
* Doubting: when the winner's runs since the choice cost more than :data:`DOUBT` above
  the loser's last measured cost, the loser runs once more at once (once per choice): a
  choice made on a lucky run, or a winner that slowed down, is seen within a few runs, not
  at the 16th. The winner is judged then by its runs since the choice. (Seen in a grid run:
  Berxit small b64 chose direct on two settling runs and kept it, 1.10x the batched
  runs' cost, for the whole row.) A loser that is also slower now (the machine slowed down)
  keeps the choice.
* Re-measuring: the other strategy (the loser) runs again at the 16th, 32nd, 64th, ...
  run since the choice was last made or changed (then every :data:`MAX_GAP`-th run), so
  a change that favours the loser flips the choice; this costs about log2(n) of n runs.
  A loser more than :data:`FAR` times the winner's cost (TreeLSTM's direct program at
  batch 8: ~3x) is re-measured every :data:`MAX_GAP`-th run only: a busy machine moved
  costs by 1.4x here, and each re-measure of a far loser costs more than a winning run.
  The first re-measure waits :data:`FIRST` runs: with re-measures at the 4th and 8th runs,
  2 of the first 9 runs after the choice were the loser's (in a grid row of 7 timed runs,
  BiRNN small b8 and b64 ran direct twice, TreeLSTM small b8 once, at 2-3x a batched
  run's time); a lasting change is now seen after 16 runs instead of 4.
* Every run, forced ones included, adds its time to its group, and after each the
  choice is recomputed.

``RunStats.strategy`` says which ran and ``RunStats.strategy_reason`` why, in one
sentence (also in the trace's ``RunSummary``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from acrobat.errors import AcrobatNameError

STRATEGIES = ("auto", "batched", "direct")

Group = int  # the lowest batch size of a range of batch sizes


def group_of(n: int) -> Group:
    """The batch-size range a run of ``n >= 1`` instances counts in (1, 2-3, 4-7, ...)."""
    return 1 << (n.bit_length() - 1)


def _group_name(lo: int) -> str:
    hi = 2 * lo - 1
    return f"batch size {lo}" if lo == hi else f"batch sizes {lo}-{hi}"


MIN_RUNS = 2  # measured runs of each strategy before choosing
WINDOW = 3  # a strategy's cost: the best of its last WINDOW measured runs
FIRST = 16  # the first re-measure of the loser: the FIRST-th run since the choice
MAX_GAP = 256  # re-measure the loser at least every MAX_GAP runs
FAR = 2.0  # a loser this many times the winner's cost is re-measured every MAX_GAP runs only
DOUBT = 0.05  # the winner's runs since the choice this much above the loser's: re-measure it


def remeasure_at(n: int, far: bool = False) -> bool:
    """Whether the ``n``-th run since the choice (1-based) re-measures the loser: 16, 32,
    64, ... up to :data:`MAX_GAP`, then every :data:`MAX_GAP`-th; a loser ``far`` behind
    (more than :data:`FAR` times the winner's cost: no change of load makes up for that)
    every :data:`MAX_GAP`-th only."""
    if n >= MAX_GAP or far:
        return n % MAX_GAP == 0
    return n >= FIRST and n & (n - 1) == 0


@dataclass
class _Group:
    """Measured runs of one batch-size range."""

    # strategy -> its last (ms per kernel call, run number in the group)
    recent: dict[str, deque] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)  # strategy -> measured runs
    choice: str | None = None  # the strategy chosen once both were measured
    since: int = 0  # measured runs since the choice was made or changed
    clock: int = 0  # measured runs in the group
    chosen_at: int = 0  # the clock when the choice was made or changed
    doubted: bool = False  # the loser ran since the choice (see DOUBT)

    def cost(self, strategy: str, since: int = 0) -> float | None:
        """The best of the strategy's last runs, of those numbered ``since`` or later
        (``None``: none is that recent)."""
        costs = [c for c, t in self.recent[strategy] if t >= since]
        return min(costs) if costs else None

    def settled(self) -> bool:
        return all(self.runs.get(s, 0) >= MIN_RUNS for s in ("batched", "direct"))

    def cost_since_choice(self) -> float | None:
        """The chosen strategy's cost by its runs since the choice (None: none yet)."""
        return self.cost(self.choice, since=self.chosen_at + 1)

    def winner_cost(self) -> float:
        """The chosen strategy's cost by its runs since the choice (all of its last runs
        while it has none since)."""
        since = self.cost_since_choice()
        return since if since is not None else self.cost(self.choice)

    def doubt(self, lose: str) -> bool:
        """Whether the winner's runs since the choice cost more than DOUBT above the
        loser's last cost, and the loser has not run since the choice."""
        since = self.cost_since_choice()
        return not self.doubted and since is not None and since > (1 + DOUBT) * self.cost(lose)


class StrategyChooser:
    """The measured cost of each strategy, per batch-size range (untraced runs)."""

    def __init__(self) -> None:
        self.warmed = False  # the first run of all is not measured
        self.groups: dict[Group, _Group] = {}

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
            group = group_of(n) if trace_level == "off" else None
        if strategy != "auto":
            return strategy, f"strategy={strategy!r} was asked for", group
        if group is None:
            return "batched", _why_batched(policy, backend, trace_level, memory_limit, n), None
        where = _group_name(group)
        if not self.warmed:
            return "batched", "auto: the program's first run (a warm-up, not measured)", group
        g = self.groups.get(group) or _Group()
        if not g.settled():
            nb, nd = g.runs.get("batched", 0), g.runs.get("direct", 0)
            how = "batched" if nb <= nd else "direct"
            return (
                how,
                f"auto: measuring {how} at {where} (run {min(nb, nd) + 1} of {MIN_RUNS} of "
                "each before choosing)",
                group,
            )
        win = g.choice
        lose = "direct" if win == "batched" else "batched"
        costs = (
            f"{g.cost(win) * 1e3:.1f} us per kernel call vs {g.cost(lose) * 1e3:.1f} for "
            f"{lose} at {where} (best of the last {WINDOW} measured runs of each)"
        )
        if g.doubt(lose):
            return (
                lose,
                f"auto: re-measuring {lose} ({win}'s runs since the choice cost more than "
                f"{lose}'s: {win} took {costs})",
                group,
            )
        if remeasure_at(g.since + 1, far=g.cost(lose) > FAR * g.cost(win)):
            return (
                lose,
                f"auto: re-measuring {lose} (run {g.since + 1} since the choice; {win} took "
                f"{costs})",
                group,
            )
        return win, f"auto: {win} took {costs}", group

    def settled(self, n: int) -> bool:
        """Whether ``auto`` has measured both strategies at batch size ``n`` (and so runs
        the one it chose, re-measuring the other now and then)."""
        g = self.groups.get(group_of(n)) if n else None
        return self.warmed and g is not None and g.settled()

    def observe(self, group: Group | None, strategy: str, total_ms: float, nodes: int) -> None:
        """Count a finished run's time in its group; recompute the group's choice."""
        if not self.warmed:
            self.warmed = True
            return
        if group is None:
            return
        g = self.groups.setdefault(group, _Group())
        g.clock += 1
        g.recent.setdefault(strategy, deque(maxlen=WINDOW)).append(
            (total_ms / max(nodes, 1), g.clock)
        )
        g.runs[strategy] = g.runs.get(strategy, 0) + 1
        if not g.settled():
            return
        if g.choice is None:  # the runs of both alternated: compare them all
            best = "direct" if g.cost("direct") < g.cost("batched") else "batched"
        else:  # only the loser's runs made since the winner's oldest count against it
            win = g.choice
            lose = "direct" if win == "batched" else "batched"
            if strategy == lose:
                g.doubted = True
            # (and none from before the choice: the winner is judged by its runs since)
            oldest = min(t for _, t in g.recent[win])
            fresh = g.cost(lose, since=max(oldest, g.chosen_at + 1))
            best = lose if fresh is not None and fresh < g.winner_cost() else win
        if best != g.choice:
            g.choice, g.since, g.chosen_at, g.doubted = best, 0, g.clock, False
        else:
            g.since += 1


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


__all__ = [
    "DOUBT",
    "FAR",
    "FIRST",
    "MAX_GAP",
    "MIN_RUNS",
    "STRATEGIES",
    "WINDOW",
    "StrategyChooser",
    "remeasure_at",
]
