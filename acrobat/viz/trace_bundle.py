"""One shareable file for an explorer session: the compile trace and every run's trace.

A run's trace is a :class:`~acrobat.trace.Trace` ending in ``RunSummary``; the compile trace holds
``PassApplied`` / ``TaintComputed`` / ``StageTaint``. Joined in order they are one JSON Lines file (the format of
``Trace.save``), and :func:`split_trace` cuts such a file back into its parts, so a downloaded
session re-opens with every view (policy A is the first run, policy B the second). A file the
explorer saved starts with a ``SessionSettings`` event (model, size, source, run settings), so
opening it restores the whole page; a trace saved from Python has none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from acrobat.trace import Event, SessionSettings, Trace, split_runs


@dataclass(frozen=True)
class TraceBundle:
    """A compile trace and the run traces that followed it, in order."""

    compile: Trace
    runs: tuple[Trace, ...]
    settings: SessionSettings | None = None


def join_traces(compile_trace: Trace | None, *runs: Trace | None) -> Trace:
    """The events of ``compile_trace`` followed by each run's, as one trace (``None`` skipped)."""
    events: list[Event] = []
    for part in (compile_trace, *runs):
        if part is not None:
            events.extend(part.events)
    return Trace(events)


def split_trace(trace: Trace) -> TraceBundle:
    """Cut a joined trace into its compile events and its runs (each run ends at RunSummary,
    ``acrobat.trace.split_runs``); the first ``SessionSettings`` event, if any, becomes
    ``settings``."""
    settings = next((e for e in trace.events if isinstance(e, SessionSettings)), None)
    compile_events, runs = split_runs(trace)
    return TraceBundle(Trace(compile_events), tuple(Trace(events) for events in runs), settings)


def dumps(trace: Trace) -> str:
    """The trace as JSON Lines text, exactly what ``Trace.save`` writes."""
    return "".join(json.dumps(event.to_dict()) + "\n" for event in trace.events)


def loads(text: str, name: str = "<trace>") -> Trace:
    """Read JSON Lines text written by :func:`dumps` or ``Trace.save``.

    Raises ``ValueError`` naming the first line that is not a trace event."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            events.append(Event.from_dict(json.loads(line)))
        except (ValueError, TypeError, AttributeError) as err:
            raise ValueError(f"{name}:{number}: not a trace event: {err}") from None
    return Trace(events)
