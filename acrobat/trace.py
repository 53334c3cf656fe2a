"""Trace: the event records every layer emits, and their JSON Lines form.

A :class:`Trace` is an ordered list of frozen event records. Viewers (the explorer,
notebooks) read traces only, never runtime internals, so a trace saved with
:meth:`Trace.save` and shared with someone else shows them exactly the same views.
:func:`chrome_trace` turns a trace into the Chrome Trace Event Format (what
``Trace.save(path, format="chrome")`` writes, for ui.perfetto.dev and chrome://tracing), from the
nested slices of :func:`run_slices`, which the explorer's timeline draws too. This module uses
the standard library and ``acrobat.errors`` only: it is the bottom layer.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from acrobat.errors import AcrobatNameError
from acrobat.reprs import counted, html_summary, text_summary

EVENT_TYPES: dict[str, type[Event]] = {}
TRACE_FORMATS = ("jsonl", "chrome")


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
class StageTaint(Event):
    """Taint classes of every variable of one host function at one stage of the pass
    pipeline: stage 0 is the parsed program (the first pass's input), stage k the IR after
    the k-th ``PassApplied`` (the last stage is the program ``TaintComputed`` describes)."""

    stage: int
    function: str
    classes: dict = field(default_factory=dict)


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
    """A span of host time. A batched run records "upload", "graph_construction" (the host
    program; a fiber program's flushes run inside it), per flush "dfg_arrays", "scheduling" and
    "execution", after a fiber program's flush "list_reductions" where it answered ``sum``,
    ``max``, ``argmax`` or ``attend`` of a List (:mod:`acrobat.runtime.segments`: one per launch), then
    "outputs", and "total" (the whole run); a direct run "direct" and "total"."""

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
    """One batched kernel launch with its host-side (or device) time.

    ``start_ms``/``end_ms`` bound the kernel's own work (the call and the backend's
    synchronize). A traced run also records the launch's sub-steps around it:
    ``gather_start_ms`` is when the launch began (taking its slice of the flush's plan —
    the executor allocates every output block and records their rows before a flush's
    first launch — and gathering the inputs, or, with ``fused_gather``, handing the kernel
    their rows: it copies them itself) and ``scatter_end_ms`` when the launch returned.
    Both are ``None`` in traces written before they existed."""

    index: int
    kernel: str
    size: int
    start_ms: float
    end_ms: float
    bytes_gathered: int = 0
    device: str = "cpu"
    device_ms: float | None = None  # time on the device (CUDA events), when measured
    gather_start_ms: float | None = None
    scatter_end_ms: float | None = None
    fused_gather: bool = False


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


@dataclass(frozen=True)
class SessionSettings(Event):
    """What the explorer showed when its session trace was saved: the model, size and program
    text, the run settings, and the optimizations switched off. Opening the file in the
    explorer restores the page from it (nothing is rerun)."""

    model: str
    size: str
    source: str
    batch_size: int
    seed: int
    backend: str
    policy_a: str
    policy_b: str
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigurationTimed(Event):
    """The timed runs of one configuration (a policy, with ``options`` the optimizations it
    ran with) in one interleaved measurement of the explorer: every timed run's wall time,
    the medians of its host and kernel time, and its run's counts. A saved session carries
    them, so it reopens with its medians, spreads and verdicts (nothing is rerun)."""

    policy: str
    options: str
    wall_ms: tuple[float, ...]
    host_ms: float = 0.0
    exe_ms: float = 0.0
    launches: int = 0
    mean_batch: float = 0.0
    lower_bound: int = 0
    nodes: int = 0
    strategy: str = ""  # "" when batched, else how it ran instead and why
    measurement: int = 0  # which measurement timed it: configurations of one are comparable
    warmup: int = 0  # dropped runs before the timed ones
    others_busy: float = 0.0  # share of the CPUs other processes used meanwhile
    load: str = ""
    note: str = ""  # why fewer runs than asked, or ""


class _Deferred:
    """A part of a trace whose events are made when the trace is first read."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], list[Event]]):
        self.make = make


class Trace:
    """An ordered, append-only list of events.

    A producer may :meth:`defer` a part: a function that makes its events, called when the
    trace is first read (``events``, iteration, ``of``, ``len``, ``save``). A traced run
    defers what it measured (its launches, phases, schedules and summary): the run pays
    for recording the times, and making ~2 events per launch waits until someone reads
    them, after the run."""

    def __init__(self, events: list[Event] | None = None):
        self._events: list = list(events) if events is not None else []
        self._deferred = False

    @property
    def events(self) -> list[Event]:
        """Every event, in order (deferred parts made now, once)."""
        if self._deferred:
            made: list[Event] = []
            for e in self._events:
                if isinstance(e, _Deferred):
                    made.extend(e.make())
                else:
                    made.append(e)
            self._events, self._deferred = made, False
        return self._events

    def emit(self, event: Event) -> None:
        self._events.append(event)

    def defer(self, make: Callable[[], list[Event]]) -> None:
        """Add the events ``make()`` returns here, made when the trace is first read."""
        self._events.append(_Deferred(make))
        self._deferred = True

    def of(self, kind: type[Event]) -> list[Event]:
        """The events of one type, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def _summary(self) -> list[tuple[str, object]]:
        kinds: dict[str, int] = {}
        for e in self.events:
            kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
        return [("events", len(self.events)), ("kinds", counted(kinds) or "none")]

    def __repr__(self) -> str:
        return text_summary("Trace", self._summary())

    def _repr_html_(self) -> str:
        return html_summary("Trace", self._summary())

    def save(self, path: str | Path, format: str = "jsonl") -> None:
        """Write the trace: ``format="jsonl"`` (the default) as JSON Lines, one event per line,
        which :meth:`load` reads back (never pickle); ``format="chrome"`` as the Chrome Trace
        Event Format (:func:`chrome_trace`), which ui.perfetto.dev and chrome://tracing open.
        Another format raises :class:`~acrobat.errors.AcrobatNameError` naming the choices."""
        if format not in TRACE_FORMATS:
            raise AcrobatNameError(
                f"unknown trace format {format!r}", hint=f"choose one of {TRACE_FORMATS}"
            )
        with open(path, "w", encoding="utf-8") as f:
            if format == "chrome":
                json.dump(chrome_trace(self), f)
                return
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


# -- nested slices and the Chrome Trace Event Format ---------------------------------------

STEP_CATS = ("gather", "kernel", "scatter")
SLICE_RANK = {"run": 0, "host": 1, "batch": 2, "gather": 3, "kernel": 3, "scatter": 3}
TRACKS = ("host", "kernels", "device")  # Chrome trace thread ids 1, 2, 3 of each run
_STEP_NOTES = {
    "gather": "take the batch's record rows, allocate its output block, gather its inputs",
    "gather (fused)": "take the batch's record rows, allocate its output block, look up its "
    "input rows (the kernel copies them itself: fused gather)",
    "kernel": "the kernel call and the backend's synchronize",
    "scatter": "record where the outputs' rows now live (value id -> arena row)",
}


@dataclass(frozen=True)
class Slice:
    """One timed slice of a run, in milliseconds since the run began.

    ``cat`` is "run", "host" (a host phase), "batch" (one kernel launch), "gather", "kernel"
    or "scatter" (a launch's steps), "device" (device time of a launch) or "pass" (a
    compiler pass). ``depth`` is its nesting depth: every slice lies inside the slices of
    smaller depth before it on its track's flame (host and kernels nest as one flame)."""

    name: str
    cat: str
    start_ms: float
    end_ms: float
    track: str
    depth: int = 0
    args: dict = field(default_factory=dict)

    @property
    def dur_ms(self) -> float:
        return self.end_ms - self.start_ms


def split_runs(trace: Trace) -> tuple[list[Event], list[list[Event]]]:
    """The compile events before the first run (``PassApplied``, ``TaintComputed``,
    ``StageTaint``) and each
    run's events (a run ends at its ``RunSummary``). ``SessionSettings`` and
    ``ConfigurationTimed`` belong to neither: they describe the page that saved the file."""
    compile_events: list[Event] = []
    runs: list[list[Event]] = []
    open_run: list[Event] | None = None
    for event in trace.events:
        if isinstance(event, (SessionSettings, ConfigurationTimed)):
            continue
        if open_run is None and isinstance(event, (PassApplied, TaintComputed, StageTaint)):
            compile_events.append(event)
            continue
        if open_run is None:
            open_run = []
            runs.append(open_run)
        open_run.append(event)
        if isinstance(event, RunSummary):
            open_run = None
    return compile_events, runs


def run_policy(events: list[Event] | Trace) -> str:
    """The scheduling policy of one run's events ("?" when none is recorded)."""
    for e in events:
        if isinstance(e, (ScheduleFormed, BatchFormed)):
            return e.policy
        if isinstance(e, RunSummary) and "policy" in e.stats:
            return str(e.stats["policy"])
    return "?"


def run_slices(events: list[Event] | Trace) -> list[Slice]:
    """One run's timed slices, nested by time: the run (its ``"total"`` host span), its host
    phases (``HostSpan``), its batches (``KernelLaunched``, with their ``BatchFormed``) and
    each batch's gather / kernel / scatter steps where the trace has them (traces written
    before they were recorded have the batch only; the direct strategy has no batches), and
    the device time of launches that measured it, on the "device" track.

    Sorted by start (a parent before its children) with ``depth`` set. A slice that would
    overlap the end of its parent (rounding; never seen) is cut at the parent's end."""
    events = list(events)
    policy = run_policy(events)
    stats = next((e.stats for e in events if isinstance(e, RunSummary)), {})
    flame: list[Slice] = []
    device: list[Slice] = []
    formed: BatchFormed | None = None
    number = 0
    for e in events:
        if isinstance(e, HostSpan):
            if e.name == "total":
                args = {"policy": policy, **stats}
                flame.append(Slice(f"run: {policy}", "run", e.start_ms, e.end_ms, "host", 0, args))
            else:
                flame.append(Slice(e.name, "host", e.start_ms, e.end_ms, "host"))
        elif isinstance(e, BatchFormed):
            formed = e
        elif isinstance(e, KernelLaunched):
            number += 1
            args = {
                "kernel": e.kernel,
                "batch": number,
                "batch size": e.size,
                "bytes gathered": e.bytes_gathered,
                "policy": policy,
                "device": e.device,
            }
            if formed is not None and formed.index == e.index and formed.kernel == e.kernel:
                args.update({"run pass": formed.run_pass, "level": formed.level})
            formed = None
            if e.device_ms is not None:
                args["device ms"] = e.device_ms
            begin = e.start_ms if e.gather_start_ms is None else e.gather_start_ms
            end = e.end_ms if e.scatter_end_ms is None else e.scatter_end_ms
            flame.append(Slice(e.kernel, "batch", begin, end, "kernels", 0, args))
            steps = []
            if e.gather_start_ms is not None:
                note = _STEP_NOTES["gather (fused)" if e.fused_gather else "gather"]
                steps.append(("gather", e.gather_start_ms, e.start_ms, note))
            steps.append(("kernel", e.start_ms, e.end_ms, _STEP_NOTES["kernel"]))
            if e.scatter_end_ms is not None:
                steps.append(("scatter", e.end_ms, e.scatter_end_ms, _STEP_NOTES["scatter"]))
            if len(steps) > 1:  # a batch with only its kernel step has no steps to show
                for name, a, b, note in steps:
                    flame.append(Slice(name, name, a, b, "kernels", 0, {**args, "step": note}))
            if e.device_ms is not None:  # its start on the device is not recorded
                dur = min(e.device_ms, e.end_ms - e.start_ms)
                note = "device time; placed at the kernel step's start (not recorded)"
                device_args = {**args, "step": note}
                device.append(
                    Slice(
                        e.kernel, "device", e.start_ms, e.start_ms + dur, "device", 0, device_args
                    )
                )
    return _nested(flame) + _nested(device)


def _nested(slices: list[Slice]) -> list[Slice]:
    """``slices`` sorted by start, parents first, with depths; a partial overlap is cut."""
    order = sorted(slices, key=lambda s: (s.start_ms, -s.end_ms, SLICE_RANK.get(s.cat, 9)))
    out: list[Slice] = []
    stack: list[Slice] = []
    for s in order:
        while stack and not (stack[-1].start_ms <= s.start_ms and s.end_ms <= stack[-1].end_ms):
            top = stack[-1]
            if top.start_ms <= s.start_ms < top.end_ms:  # overlaps the parent's end: cut
                s = dataclasses.replace(s, end_ms=top.end_ms)
                break
            stack.pop()
        s = dataclasses.replace(s, depth=len(stack))
        stack.append(s)
        out.append(s)
    return out


def pass_slices(events: list[Event] | Trace) -> list[Slice]:
    """The compiler passes of ``events`` (``PassApplied``) end to end from 0: a pass records
    its duration, not its start."""
    out, t = [], 0.0
    for e in events:
        if isinstance(e, PassApplied):
            args = {"summary": e.summary, "start": "the sum of the earlier passes' durations"}
            out.append(Slice(e.name, "pass", t, t + e.ms, "compile", 0, args))
            t += e.ms
    return out


def chrome_trace(trace: Trace) -> dict[str, Any]:
    """``trace`` in the Chrome Trace Event Format (a JSON-ready dict), as ui.perfetto.dev and
    chrome://tracing read it.

    Each run (a trace may hold several, e.g. an explorer session's policy A and B runs) is one
    process, ``pid`` 1, 2, ... named "run N: <policy>", with the threads "host" (``tid`` 1: the
    run and its host phases), "kernels" (2: batches and their gather / kernel / scatter
    steps) and "device" (3: measured device time), each run's time from 0 at its start. The
    compiler passes, when present, are one more process. Slices are complete events
    (``"ph": "X"``) with ``ts`` and ``dur`` in microseconds, nested by time on each thread;
    metadata events (``"ph": "M"``) name processes and threads."""
    compile_events, runs = split_runs(trace)
    events: list[dict[str, Any]] = []
    groups = [(f"run {n}: {run_policy(run)}", run_slices(run)) for n, run in enumerate(runs, 1)]
    passes = pass_slices(compile_events)
    if passes:
        groups.append(("compile (passes end to end)", passes))
    for pid, (name, slices) in enumerate(groups, 1):
        events.append(_meta("process_name", pid, 0, name=name))
        events.append(_meta("process_sort_index", pid, 0, sort_index=pid))
        tracks = [t for t in (*TRACKS, "compile") if any(s.track == t for s in slices)]
        for track in tracks:
            tid = _tid(track)
            events.append(_meta("thread_name", pid, tid, name=track))
            events.append(_meta("thread_sort_index", pid, tid, sort_index=tid))
        for s in slices:
            events.append(
                {
                    "name": s.name,
                    "cat": s.cat,
                    "ph": "X",
                    "ts": s.start_ms * 1e3,
                    "dur": max(s.dur_ms, 0.0) * 1e3,
                    "pid": pid,
                    "tid": _tid(s.track),
                    "args": {k: _jsonable(v) for k, v in s.args.items()},
                }
            )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"generator": "acrobat", "runs": len(runs)},
    }


def _tid(track: str) -> int:
    return TRACKS.index(track) + 1 if track in TRACKS else len(TRACKS) + 1


def _meta(what: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {"name": what, "ph": "M", "pid": pid, "tid": tid, "args": args}
