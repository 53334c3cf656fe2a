"""Large launches in row tiles, so a kernel's temporaries stay in cache.

A NumPy kernel works on its whole batch at once: every intermediate tensor is a
``[B, ...]`` array. Where one instance's intermediates are megabytes (a Transformer
layer: Berxit small holds ~8 MB per instance in its FFN and attention temporaries), a
batch of 64 streams hundreds of megabytes through memory per op and the kernel runs far
below its single-instance speed. Measured on this repository's 2-core machine
(OpenBLAS 1 thread, Berxit small ``encoder_layer``, milliseconds per instance at
B = 64 called in tiles of T rows): T=1 14.8, T=4 14.5, T=16 15.2, T=64 (untiled) 24.3;
``attention``: 7.7, 7.4, 7.6, 8.7.

So the NumPy backend calls a kernel whose per-instance working set times the batch
exceeds :data:`TILE_BYTES` in tiles of ``max(1, TILE_BYTES // working set)`` rows: the
rows of a launch are independent instances, so a tile is the same kernel on a slice of
the arguments (gathered ``(arena buffer, rows)`` pairs slice their rows, host ints their
column) writing a slice of the output blocks. Results are identical (each row is
computed by the same code); small kernels (every model here but Berxit) are never tiled.
GPUs want the opposite (the largest launches), so only the NumPy backend tiles.
"""

from __future__ import annotations

from collections.abc import Callable

from acrobat.errors import RunCancelled
from acrobat.ir.nodes import Function, Let
from acrobat.ir.types import TensorType, TupleType, Type

TILE_BYTES = 16 << 20
"""Working-set budget of one kernel call (bytes): about half this machine's 32 MiB L3,
where the measured per-instance time stops improving (see the module docstring)."""


def _tensor_bytes(t: Type | None) -> int:
    if isinstance(t, TensorType):
        return t.nbytes
    if isinstance(t, TupleType):
        return sum(_tensor_bytes(f) for f in t.fields)
    return 0


def row_bytes(f: Function) -> int:
    """One instance's working set in kernel ``f``: its parameters and every value the
    body binds (an upper bound: some bindings are views or reuse a buffer)."""
    total = sum(_tensor_bytes(p.ty) for p in f.params)
    body = f.body
    if isinstance(body, Let):
        total += sum(_tensor_bytes(b.var.ty) for b in body.bindings)
    return total


UNTILED_ROWS = 1 << 16
"""A kernel whose tile would hold at least this many rows is never tiled (no launch is
that large in practice, and the call skips the tiling wrapper)."""


WEIGHT_RATIO = 8
"""Only kernels whose weights are at most this many times one instance's working set
are tiled: each tile reads the weights again, and a weight-bound kernel (a GEMM over
large weights: TreeLSTM's cell, 65-130x) gains from every extra row in one call."""


def tile_rows(f: Function, weight_bytes: int = 0, budget: int = TILE_BYTES) -> int | None:
    """The most rows one call of kernel ``f`` (reading ``weight_bytes`` of weights)
    takes, larger launches being called in tiles; None where the kernel is not tiled."""
    per_row = row_bytes(f)
    if per_row <= 0 or weight_bytes > WEIGHT_RATIO * per_row:
        return None
    rows = max(1, budget // per_row)
    return rows if rows < UNTILED_ROWS else None


def take_rows(arg, s: int, e: int):
    """Rows ``s:e`` of a kernel argument in either calling convention: a slice of a
    gathered ``[B, ...]`` array (or of host ids), or ``(arena buffer, its rows s:e)``."""
    if isinstance(arg, tuple):  # (arena buffer, rows): the kernel gathers them
        return (arg[0], arg[1][s:e])
    return arg[s:e]


class CancelSlot:
    """Where a runtime puts its running run's cancel flag (:mod:`acrobat.runtime.cancel`),
    or None, for its tiled launches to read between tiles: one launch of Berxit's attention
    at b256 is 256 tiles and seconds long, too long to wait for the next launch."""

    __slots__ = ("flag",)

    def __init__(self) -> None:
        self.flag: bytearray | None = None


def _stop_if_cancelled(cancel: CancelSlot | None) -> None:
    flag = None if cancel is None else cancel.flag
    if flag is not None and flag[0]:
        raise RunCancelled()


def tiled(fn: Callable, rows: int, cancel: CancelSlot | None = None) -> Callable:
    """``fn(n, *args, out=views)`` called in tiles of at most ``rows`` rows when
    ``n > rows`` (a call without ``out`` returns the results, untiled); a set flag in
    ``cancel`` stops it before the next tile (``RunCancelled``)."""

    def call(n, *args, out=None):
        if n <= rows or out is None:
            return fn(n, *args, out=out)
        for s in range(0, n, rows):
            if s:
                _stop_if_cancelled(cancel)
            e = min(n, s + rows)
            fn(e - s, *[take_rows(a, s, e) for a in args], out=[o[s:e] for o in out])
        return None

    call.rows = rows
    return call


def tiled_group(fn: Callable, rows: int, cancel: CancelSlot | None = None) -> Callable:
    """:func:`tiled` for a twin group's kernel, ``fn(n, *args, out=views, _segs=...)``:
    each tile gets the ``(member, rows)`` pairs of its own rows."""

    def call(n, *args, out=None, _segs=()):
        if n <= rows or out is None:
            return fn(n, *args, out=out, _segs=_segs)
        spans = []  # (member, first row, end row) in row order
        at = 0
        for m, c in _segs:
            spans.append((m, at, at + c))
            at += c
        for s in range(0, n, rows):
            if s:
                _stop_if_cancelled(cancel)
            e = min(n, s + rows)
            segs = tuple((m, min(e, b) - max(s, a)) for m, a, b in spans if a < e and b > s)
            fn(e - s, *[take_rows(a, s, e) for a in args], out=[o[s:e] for o in out], _segs=segs)
        return None

    call.rows = rows
    return call


__all__ = [
    "CancelSlot",
    "TILE_BYTES",
    "UNTILED_ROWS",
    "WEIGHT_RATIO",
    "row_bytes",
    "take_rows",
    "tile_rows",
    "tiled",
    "tiled_group",
]
