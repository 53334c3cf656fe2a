"""What a run borrows from the process, and how it gives it back.

Some settings a batched run needs belong to the whole interpreter, not to a runtime: the
recursion limit (the Python host program recurses as deep as the instances' data), the
cycle collector (the host program and the outputs make and free many small objects by
reference counting; the collector's passes over them cost about a tenth of a BiRNN run's
host time), the BLAS's thread count and the native kernels' thread rule
(:mod:`acrobat.runtime.threads`). Two runs that set and restored them independently, from
two threads, restored each other's values (and two threads in one ``Runtime`` shared its
record lists: wrong outputs). So every run holds :func:`borrowed`: runs take turns (one
re-entrant lock per process: a run uses every core it is given anyway), the first entry
saves the settings and the last exit restores them exactly as found, whatever raised.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator

HOST_RECURSION_LIMIT = 200_000
"""The recursion limit while a run holds the process: a host program recursing over a
tree of depth ``d`` takes about ``3 d`` Python frames (its host functions, the calls
between them); deeper data is refused with a typed error (``InstanceError``)."""


class _Borrowed:
    """The lock and the settings saved by the outermost entry."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.limit = 0
        self.collecting = False


_PROCESS = _Borrowed()


@contextlib.contextmanager
def borrowed() -> Iterator[None]:
    """Hold the process for a run: one run at a time; the recursion limit raised to
    :data:`HOST_RECURSION_LIMIT` and the cycle collector paused while it runs, both
    restored when the outermost run ends."""
    p = _PROCESS
    with p.lock:
        if p.depth == 0:
            p.limit, p.collecting = sys.getrecursionlimit(), gc.isenabled()
            sys.setrecursionlimit(max(p.limit, HOST_RECURSION_LIMIT))
            gc.disable()
        p.depth += 1
        try:
            yield
        finally:
            p.depth -= 1
            if p.depth == 0:
                sys.setrecursionlimit(p.limit)
                if p.collecting:
                    gc.enable()
