"""One shareable file for an explorer session: the compile trace and every run's trace.

A run's trace is a :class:`~acrobat.trace.Trace` ending in ``RunSummary``; the compile trace holds
``PassApplied`` / ``TaintComputed`` / ``StageTaint``. Joined in order they are one JSON Lines file (the format of
``Trace.save``), and :func:`split_trace` cuts such a file back into its parts, so a downloaded
session re-opens with every view (policy A is the first run, policy B the second). A file the
explorer saved starts with a ``SessionSettings`` event (model, size, source, run settings), so
opening it restores the whole page; a trace saved from Python has none.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from acrobat.trace import ConfigurationTimed, Event, SessionSettings, Trace, split_runs


@dataclass(frozen=True)
class TraceBundle:
    """A compile trace and the run traces that followed it, in order."""

    compile: Trace
    runs: tuple[Trace, ...]
    settings: SessionSettings | None = None
    timed: tuple[ConfigurationTimed, ...] = ()


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
    ``settings``, and the ``ConfigurationTimed`` events ``timed``."""
    settings = next((e for e in trace.events if isinstance(e, SessionSettings)), None)
    timed = tuple(e for e in trace.events if isinstance(e, ConfigurationTimed))
    compile_events, runs = split_runs(trace)
    runs = tuple(Trace(events) for events in runs)
    return TraceBundle(Trace(compile_events), runs, settings, timed)


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
            event = Event.from_dict(json.loads(line))
            _check_fields(event)
            if isinstance(event, ConfigurationTimed):
                _check_timed(event)
        except (ValueError, TypeError, AttributeError) as err:
            raise ValueError(f"{name}:{number}: not a trace event: {err}") from None
        events.append(event)
    return Trace(events)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return _is_int(v) or isinstance(v, float)


# what a field of each declared type may hold, in a file from anywhere ("dict" and a bare
# "tuple" are free-form: the views escape what they show of them)
_FIELD_CHECKS = {
    "int": _is_int,
    "float": _is_number,
    "float | None": lambda v: v is None or _is_number(v),
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "tuple[int, ...]": lambda v: isinstance(v, tuple) and all(map(_is_int, v)),
    "tuple[float, ...]": lambda v: isinstance(v, tuple) and all(map(_is_number, v)),
    "tuple[str, ...]": lambda v: isinstance(v, tuple) and all(isinstance(x, str) for x in v),
}


def _check_fields(event: Event) -> None:
    """Raise ``TypeError`` if a field holds another type than the event declares (a
    hand-made file could put markup where the views expect a count). ``SessionSettings`` is
    let through: a file whose settings cannot apply opens read-only instead."""
    if isinstance(event, SessionSettings):
        return
    for f in dataclasses.fields(event):
        check = _FIELD_CHECKS.get(str(f.type))
        value = getattr(event, f.name)
        if check is not None and not check(value):
            raise TypeError(f"{event.kind}.{f.name} should be {f.type}, got {value!r:.80}")


MAX_TIMED_RUNS = 10_000  # wall times one configuration may carry (the explorer times <= 50)


def _check_timed(event: ConfigurationTimed) -> None:
    """Raise ``ValueError`` unless the times are what a measurement gives: at least one
    wall time, every time finite and not negative, a share of the CPUs within 0..1."""
    if not 0 < len(event.wall_ms) <= MAX_TIMED_RUNS:
        raise ValueError(f"ConfigurationTimed.wall_ms should hold 1 to {MAX_TIMED_RUNS} times")
    times = (*event.wall_ms, event.host_ms, event.exe_ms, event.mean_batch)
    if not all(math.isfinite(t) and t >= 0 for t in times):
        raise ValueError("ConfigurationTimed times should be finite and not negative")
    counts = (event.launches, event.lower_bound, event.nodes, event.measurement, event.warmup)
    if min(counts) < 0 or not 0 <= event.others_busy <= 1:
        raise ValueError("ConfigurationTimed counts should not be negative, others_busy 0..1")
