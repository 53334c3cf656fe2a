"""The record of the explorer's timed runs: every screen's times come from it.

Each interleaved measurement (``acrobat.measure``: a run's two policies, *Compare all
policies*, *Ablate optimizations*) adds one :class:`~acrobat.trace.ConfigurationTimed` per
configuration it timed (a policy and the optimizations it ran with) to one
:class:`TimingRecord` of the workload shown. The status line and the Timeline read the entries
of policy A and B at the options shown (:meth:`TimingRecord.timing`), the Compare table reads
every entry (:meth:`TimingRecord.rows`). A configuration timed again replaces its entry, so a
configuration shows one median everywhere: the newest. A saved session carries the entries (they
are trace events), so it reopens with its medians, spreads and verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import acrobat
from acrobat.trace import ConfigurationTimed, Trace
from acrobat.viz.compare_view import BUSY_SHARE, CompareRow, verdict_text


@dataclass(frozen=True)
class TimedRun:
    """One of the timed runs, kept whole: its trace (batch level), its wall time, and which
    it was (``index`` of ``count``, from 1): the Timeline draws the one nearest the median."""

    trace: Trace
    wall_ms: float
    index: int
    count: int


@dataclass(frozen=True)
class RunTiming:
    """The timing of the policies shown (A and B at the options shown), from the record.

    Attributes:
        spreads: wall-clock spread (ms) of each policy, in the order measured.
        repeats, warmup: timed and dropped rounds (the fewest timed of the policies).
        load: the machine's load while measuring (one line).
        note: why fewer rounds than asked ran (a long run), or "".
        separately: the policies were timed in different measurements (no verdict).
    """

    spreads: dict = field(default_factory=dict)  # policy -> acrobat.Spread
    repeats: int = 0
    warmup: int = 0
    load: str = ""
    note: str = ""
    others_busy: float = 0.0  # share of all CPUs other processes used while timing
    host_ms: dict = field(default_factory=dict)  # policy -> median DFG + scheduling ms
    exe_ms: dict = field(default_factory=dict)  # policy -> median execution ms
    strategies: dict = field(default_factory=dict)  # policy -> "batched" / "direct" (and why)
    runs: dict = field(default_factory=dict)  # policy -> TimedRun nearest its median
    separately: bool = False

    def timed_run(self, policy: str) -> TimedRun | None:
        """The timed run of ``policy`` nearest its median, or None (e.g. read from a file)."""
        return self.runs.get(policy)

    @property
    def busy(self) -> bool:
        """Whether other processes used more than ``BUSY_SHARE`` of the CPUs meanwhile."""
        return self.others_busy > BUSY_SHARE

    def spread(self, policy: str) -> acrobat.Spread | None:
        """The spread of ``policy``'s wall time, or ``None`` if it was not measured."""
        return self.spreads.get(policy)

    def verdict_text(self, a: str, b: str) -> str:
        """ "within noise" when the spreads overlap (or too few runs to tell), else which
        policy is faster and by how much."""
        sa, sb = self.spread(a), self.spread(b)
        if sa is None or sb is None or a == b:
            return ""
        if self.separately:
            return "timed in separate measurements: no winner called (Run times both together)"
        if self.busy:
            return (
                f"no winner called: other processes used {self.others_busy:.0%} of the CPUs "
                "while timing"
            )
        return verdict_text(sa, sb, a, b)


@dataclass(frozen=True)
class TimingRecord:
    """Every configuration timed on one workload (``workload``: what the runs ran on), in
    the order last timed; ``runs`` holds each one's timed run nearest its median (kept in
    memory only: a file carries the times, not the runs)."""

    workload: tuple = ()
    entries: tuple[ConfigurationTimed, ...] = ()
    runs: dict = field(default_factory=dict)  # (policy, options) -> TimedRun

    def get(self, policy: str, options: str) -> ConfigurationTimed | None:
        """The entry of ``policy`` with ``options``, or None."""
        return next((e for e in self.entries if (e.policy, e.options) == (policy, options)), None)

    def updated(self, workload: tuple, timed, runs: dict | None = None) -> TimingRecord:
        """This record with the entries ``timed`` appended (each replaces one of the same
        policy and options); another ``workload`` starts a new record."""
        entries = list(self.entries) if workload == self.workload else []
        kept = dict(self.runs) if workload == self.workload else {}
        for entry in timed:
            key = (entry.policy, entry.options)
            kept.pop(key, None)
            entries = [e for e in entries if (e.policy, e.options) != key] + [entry]
        kept.update(runs or {})
        return TimingRecord(workload, tuple(entries), kept)

    def rows(self) -> list[CompareRow]:
        """The Compare table: one row per entry."""
        return [entry_row(e) for e in self.entries]

    def timing(self, policies, options: str) -> RunTiming | None:
        """The :class:`RunTiming` of ``policies`` at ``options`` (what the status line and the
        Timeline show), or None unless every one of them is in the record."""
        chosen = {p: self.get(p, options) for p in dict.fromkeys(policies)}
        if not chosen or None in chosen.values():
            return None
        entries = list(chosen.values())
        notes = dict.fromkeys(e.note for e in entries if e.note)
        return RunTiming(
            spreads={p: acrobat.spread(e.wall_ms) for p, e in chosen.items()},
            repeats=min(len(e.wall_ms) for e in entries),
            warmup=min(e.warmup for e in entries),
            load=entries[0].load,
            note="; ".join(notes),
            others_busy=max(e.others_busy for e in entries),
            host_ms={p: e.host_ms for p, e in chosen.items()},
            exe_ms={p: e.exe_ms for p, e in chosen.items()},
            strategies={p: e.strategy for p, e in chosen.items() if e.strategy},
            runs={p: self.runs[(p, options)] for p in chosen if (p, options) in self.runs},
            separately=len({e.measurement for e in entries}) > 1,
        )


def entry_row(entry: ConfigurationTimed) -> CompareRow:
    """The Compare row of one entry: latency as the median and IQR of its timed runs."""
    s = acrobat.spread(entry.wall_ms)
    return CompareRow(
        label=f"{entry.policy} · {entry.options}",
        policy=entry.policy,
        options=entry.options,
        total_ms=s.median,
        launches=entry.launches,
        mean_batch=entry.mean_batch,
        host_ms=entry.host_ms,
        exe_ms=entry.exe_ms,
        lower_bound=entry.lower_bound,
        nodes=entry.nodes,
        total_q1_ms=s.q1,
        total_q3_ms=s.q3,
        runs=s.n,
        others_busy=entry.others_busy,
    )
