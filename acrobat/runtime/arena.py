"""Arena memory: one growable 2-D buffer per tensor class (shape, dtype).

A tensor value is a row of its class's arena; a batch's outputs are allocated as one
contiguous block of rows, so later consumers often find their inputs contiguous and
read them without a copy. Arenas are reset (not freed) between runs and reused.
"""

from __future__ import annotations

import math

import numpy as np

from acrobat.codegen.numpy_kernels import block_start
from acrobat.errors import AcrobatError


class ArenaLimitError(AcrobatError):
    """The batch needs more memory than the configured limit."""


class Arena:
    """Rows of one tensor class; ``alloc(n)`` returns the first of ``n`` new rows."""

    __slots__ = ("shape", "dtype", "width", "row_bytes", "buf", "top", "peak", "xp", "zero_copy")

    def __init__(self, shape: tuple[int, ...], dtype: str, capacity: int = 64, xp=np):
        self.xp = xp  # numpy, or cupy for device arenas
        self.zero_copy = True
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.width = max(1, math.prod(shape))
        self.row_bytes = self.width * self.dtype.itemsize  # one row (one tensor value)
        self.buf = xp.empty((capacity, self.width), self.dtype)
        self.top = 0
        self.peak = 0

    def alloc(self, n: int) -> int:
        # acrobat/native/flush.c takes rows where the buffer has room by setting top and
        # peak itself, as here (no Python call per arena and flush): keep the two in step
        start = self.top
        end = start + n
        if end > self.buf.shape[0]:
            new = self.xp.empty((max(end, 2 * self.buf.shape[0]), self.width), self.dtype)
            new[:start] = self.buf[:start]
            self.buf = new
        self.top = end
        self.peak = max(self.peak, end)
        return start

    def block(self, n: int) -> tuple[int, np.ndarray]:
        """:meth:`alloc` of ``n`` rows and their :meth:`rows` view, in one call."""
        start = self.top
        end = start + n
        if end > self.buf.shape[0]:
            self.alloc(n)
        else:
            self.top = end
            if end > self.peak:
                self.peak = end
        return start, self.buf[start:end].reshape((n,) + self.shape)

    def rows(self, start: int, n: int) -> np.ndarray:
        """A view of ``n`` rows as ``[n, *shape]``."""
        return self.buf[start : start + n].reshape((n,) + self.shape)

    def gather(self, rows: np.ndarray):
        """Rows by index (host ints) as ``([n, *shape] array, bytes copied)``: a view when
        they are contiguous and ``zero_copy`` is on (the outputs of one batch are one
        block), else a copy."""
        n = rows.shape[0]
        if self.zero_copy and n and block_start(rows) is not None:
            r0 = int(rows[0])
            return self.buf[r0 : r0 + n].reshape((n,) + self.shape), 0
        idx = rows if self.xp is np else self.xp.asarray(rows)
        out = self.buf.take(idx, axis=0).reshape((n,) + self.shape)
        return out, n * self.row_bytes

    def scattered_bytes(self, rows: np.ndarray) -> int:
        """Bytes a gather of ``rows`` copies: none when they are one block (read in place),
        else every row (what :meth:`gather` counts)."""
        n = rows.shape[0]
        if n <= 1:  # no rows, or one: a block
            return 0
        if rows[-1] - rows[0] == n - 1 and block_start(rows) is not None:
            return 0  # (ends n - 1 apart is the cheap half of the test)
        return n * self.row_bytes

    @property
    def nbytes(self) -> int:
        return self.peak * self.row_bytes


class ArenaPool:
    """All arenas of a program, keyed by tensor class; recycled across runs."""

    def __init__(self, limit_bytes: int | None = None, xp=np, zero_copy: bool = True):
        self.arenas: dict[tuple, Arena] = {}
        self.limit = limit_bytes
        self.xp = xp
        self.zero_copy = zero_copy

    def get(self, shape: tuple[int, ...], dtype: str = "float32") -> Arena:
        key = (tuple(shape), str(dtype))
        a = self.arenas.get(key)
        if a is None:
            a = self.arenas[key] = Arena(shape, dtype, xp=self.xp)
            a.zero_copy = self.zero_copy
        return a

    def reset(self) -> None:
        for a in self.arenas.values():
            a.top = 0
            a.peak = 0

    def used_bytes(self) -> int:
        """Bytes of the rows in use, over every arena."""
        return sum(a.top * a.row_bytes for a in self.arenas.values())

    def check(self, extra_bytes: int) -> None:
        """Raise before allocating if the total would pass the limit."""
        if self.limit is None:
            return
        used = self.used_bytes()
        if used + extra_bytes > self.limit:
            raise ArenaLimitError(
                f"the batch needs {_size(used + extra_bytes)} of tensor memory, more than the "
                f"limit of {_size(self.limit)}",
                hint="run fewer instances at once or raise memory_limit",
            )

    @property
    def peak_bytes(self) -> int:
        return sum(a.nbytes for a in self.arenas.values())


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
