"""A traced run's flush log, and the trace events made from it once the run is over.

Tracing observes the run; it does not choose another path. Every flush — the native
flush runner (``run_flush``, ``schedule_flush``, the compiled fiber program's
``FiberFlush``, all in ``acrobat/native/flush.c``) or the executor's Python loop — appends
to one list, in the order things ran:

* per launch ``(batch number, kernel, nodes, level, begin, start, end, done, bytes copied,
  device ms)``: ``perf_counter`` seconds (the native code reads the same clock,
  CLOCK_MONOTONIC) when the launch began (its inputs' views or gathers), when the kernel
  call started and ended (its synchronize included), and when the launch returned; level
  -1 where the flush ran a schedule Python made (:func:`emit` takes it from there);
* per flush, after its launches, a marker ``(None, t1, t2, t3, t4, nodes, launches[,
  schedule])``: records taken, DFG made, scheduled, executed.

An untraced run passes no list and the native code skips every clock read of the log. The
cost of a traced run is the clock reads, a tuple per launch, and the events made here,
after the run's clock has stopped.
"""

from __future__ import annotations

from acrobat.codegen.records import STRIDE
from acrobat.runtime.schedule import policy_info
from acrobat.trace import BatchFormed, KernelLaunched, PhaseBoundary, Trace


def mark(log: list, t1: float, t2: float, t3: float, t4: float, nodes: int, launches: int, sched):
    """The marker of a flush that Python scheduled or ran (``sched``: its schedule, whose
    batches' levels the log's launches lack, or None)."""
    log.append((None, t1, t2, t3, t4, nodes, launches, sched))


def passes(log: list):
    """The log's flushes in order: ``(marker, launches)`` pairs."""
    launches: list = []
    for entry in log:
        if entry[0] is None:
            yield entry, launches
            launches = []
        else:
            launches.append(entry)


def emit(trace: Trace, log: list, names: list[str], policy: str, backend: str, fused, t0: float):
    """Each flush's ``BatchFormed`` and ``KernelLaunched`` (and ``PhaseBoundary`` where the
    policy's levels are keyed by phase), times in ms from ``t0``; returns the host spans of
    every flush (``dfg_arrays``, ``scheduling``, ``execution``) as ``(name, start, end)``."""
    phases = policy_info(policy).keyed_levels
    spans = []
    for p, (marker, launches) in enumerate(passes(log)):
        _, t1, t2, t3, t4 = marker[:5]
        sched = marker[7] if len(marker) > 7 else None
        spans += [("dfg_arrays", t1, t2), ("scheduling", t2, t3), ("execution", t3, t4)]
        phase = None
        for i, k, n, level, begin, start, end, done, moved, device_ms in launches:
            if level < 0 and sched is not None:
                level = int(sched.batches[i].level)
            if phases:
                ph = level // STRIDE
                if phase is not None and ph != phase:
                    trace.emit(PhaseBoundary(int(ph)))
                phase = ph
            name = names[k]
            trace.emit(BatchFormed(i, name, n, level, policy, p))
            trace.emit(
                KernelLaunched(
                    i,
                    name,
                    n,
                    (start - t0) * 1e3,
                    (end - t0) * 1e3,
                    moved,
                    backend,
                    device_ms,
                    (begin - t0) * 1e3,
                    (done - t0) * 1e3,
                    fused[k],
                )
            )
    return spans
