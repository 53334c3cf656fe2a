"""Trace: the event records every layer emits, and their JSON Lines form.

A :class:`Trace` is an ordered list of frozen event records. Viewers (the explorer,
notebooks) read traces only, never runtime internals, so a trace saved with
:meth:`Trace.save` and shared with someone else shows them exactly the same views.
This module uses the standard library only: it is the bottom layer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

EVENT_TYPES: dict[str, type[Event]] = {}


@dataclass(frozen=True)
class Event:
    """Base class of trace events; subclasses register themselves by class name."""

    kind: ClassVar[str] = "Event"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.kind = cls.__name__
        EVENT_TYPES[cls.__name__] = cls

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the event type under ``"event"``."""
        d = {"event": self.kind}
        for f in dataclasses.fields(self):
            d[f.name] = _jsonable(getattr(self, f.name))
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Event:
        cls = EVENT_TYPES.get(d.get("event", ""))
        if cls is None:
            raise ValueError(f"unknown trace event {d.get('event')!r}")
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in d:
                v = d[f.name]
                kwargs[f.name] = tuple(_tuplify(x) for x in v) if isinstance(v, list) else v
        return cls(**kwargs)


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


def _tuplify(v: Any) -> Any:
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


@dataclass(frozen=True)
class PassApplied(Event):
    """One compiler pass ran: its name, the IR text before and after, and a summary."""

    name: str
    before: str
    after: str
    summary: str = ""
    ms: float = 0.0


@dataclass(frozen=True)
class TaintComputed(Event):
    """Taint classes of every variable of one function ("parameter", "instance",
    "tensor-dependent"), and whether the function runs as a fiber."""

    function: str
    classes: dict = field(default_factory=dict)
    fiber: bool = False
    tensor_branches: tuple = ()


@dataclass(frozen=True)
class HostProgramGenerated(Event):
    """The generated host program (Python source) of a compiled program."""

    source: str


@dataclass(frozen=True)
class RunSummary(Event):
    """The statistics of one run (times, launches, lower bound, memory, ...)."""

    stats: dict = field(default_factory=dict)


@dataclass(frozen=True)
class HostSpan(Event):
    """A span of host time (e.g. "graph_construction", "scheduling", "gather")."""

    name: str
    start_ms: float
    end_ms: float


@dataclass(frozen=True)
class PhaseBoundary(Event):
    """Execution moved from one program phase to the next."""

    phase: int


LAST_DEPTH = (1 << 32) - 1
"""The depth :class:`NodeRecorded` gives a node on its phase's last level (a kernel whose
result is only read on the host records there; ``acrobat.codegen.records.STRIDE - 1``)."""


@dataclass(frozen=True)
class NodeRecorded(Event):
    """One DFG node: its kernel, instance, phase, depth and producer nodes (``depth`` is
    :data:`LAST_DEPTH` for a node on its phase's last level).

    Derived from the runtime's record arrays after a run (never on the hot path)."""

    node: int
    kernel: str
    instance: int
    phase: int
    depth: int
    inputs: tuple[int, ...] = ()
    batch: int = -1


@dataclass(frozen=True)
class BatchFormed(Event):
    """The scheduler formed a batch: position in the schedule, kernel, size, level."""

    index: int
    kernel: str
    size: int
    level: int
    policy: str
    run_pass: int = 0


@dataclass(frozen=True)
class KernelLaunched(Event):
    """One batched kernel launch with its host-side (or device) time."""

    index: int
    kernel: str
    size: int
    start_ms: float
    end_ms: float
    bytes_gathered: int = 0
    device: str = "cpu"
    device_ms: float | None = None  # time on the device (CUDA events), when measured


@dataclass(frozen=True)
class KernelCompiled(Event):
    """A backend compiled a kernel; ``source`` is the generated code."""

    kernel: str
    backend: str
    source: str


@dataclass(frozen=True)
class KernelMapped(Event):
    """Where a kernel comes from, made once at compile time: the source ``file`` and
    ``lines`` of its ops and call sites, the host ``functions`` that call it, its IR ``ops``
    in order, and its signature (``params``: ``"name: type (mode)"``; ``outputs``: result
    types, shapes included). A traced run emits one per kernel beside ``KernelCompiled``."""

    kernel: str
    file: str = ""
    lines: tuple[int, ...] = ()
    functions: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScheduleFormed(Event):
    """A schedule of one DFG execution pass, with the lower bound beside it."""

    policy: str
    batches: int
    nodes: int
    lower_bound: int
    run_pass: int = 0


@dataclass
class Trace:
    """An ordered, append-only list of events."""

    events: list[Event] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Event]) -> list[Event]:
        """The events of one type, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def save(self, path: str | Path) -> None:
        """Write the trace as JSON Lines (one event per line; never pickle)."""
        with open(path, "w", encoding="utf-8") as f:
            for e in self.events:
                f.write(json.dumps(e.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        """Read a trace written by :meth:`save`."""
        events = []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        events.append(Event.from_dict(json.loads(line)))
                    except (ValueError, TypeError) as err:
                        raise ValueError(f"{path}:{n}: not a trace event: {err}") from None
        return cls(events)
