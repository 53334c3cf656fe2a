"""One shareable file for an explorer session: the compile trace and every run's trace.

A run's trace is a :class:`~acrobat.trace.Trace` ending in ``RunSummary``; the compile trace
holds ``PassApplied`` / ``TaintComputed`` / ``StageTaint``. Joined in order they are one JSON
Lines file (the format of ``Trace.save``), and :func:`split_trace` cuts such a file back into
its parts, so a downloaded session re-opens with every view (policy A is the first run,
policy B the second).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from acrobat.trace import Event, PassApplied, RunSummary, StageTaint, TaintComputed, Trace

COMPILE_EVENTS = (PassApplied, TaintComputed, StageTaint)


@dataclass(frozen=True)
class TraceBundle:
    """A compile trace and the run traces that followed it, in order."""

    compile: Trace
    runs: tuple[Trace, ...]


def join_traces(compile_trace: Trace | None, *runs: Trace | None) -> Trace:
    """The events of ``compile_trace`` followed by each run's, as one trace (``None`` skipped)."""
    events: list[Event] = []
    for part in (compile_trace, *runs):
        if part is not None:
            events.extend(part.events)
    return Trace(events)


def split_trace(trace: Trace) -> TraceBundle:
    """Cut a joined trace into its compile events and its runs (each run ends at RunSummary)."""
    compile_events: list[Event] = []
    runs: list[list[Event]] = []
    open_run: list[Event] | None = None
    for event in trace.events:
        if open_run is None and isinstance(event, COMPILE_EVENTS):
            compile_events.append(event)
            continue
        if open_run is None:
            open_run = []
            runs.append(open_run)
        open_run.append(event)
        if isinstance(event, RunSummary):
            open_run = None
    return TraceBundle(Trace(compile_events), tuple(Trace(events) for events in runs))


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
