"""The executor: runs a schedule batch by batch on a backend, in arena memory.

For each batch: gather every tensor argument with ONE index array (a view, no copy,
when the rows are already contiguous — outputs of one batch are one block, so this is
common), pass host arguments as one int array, launch the kernel once with the batch's
weights shared, and write its outputs into a fresh contiguous block of rows.
"""

from __future__ import annotations

import time

import numpy as np

from acrobat.backends.base import Backend
from acrobat.codegen.records import ARGS, INST, OUT, STRIDE
from acrobat.errors import IndexOutOfRange, InstanceError
from acrobat.ir.types import TensorType
from acrobat.runtime.arena import ArenaPool
from acrobat.runtime.dfg import DFG, KernelInfo
from acrobat.runtime.schedule import Schedule, policy_info
from acrobat.trace import BatchFormed, KernelLaunched, PhaseBoundary, Trace


class Executor:
    """Value storage (value id -> arena row) and batch execution for one program."""

    def __init__(self, kernels, fns, pool: ArenaPool, backend: Backend):
        self.kernels = kernels  # KernelSpec list, index = kernel id
        self.fns = fns
        self.pool = pool
        self.backend = backend
        self.arena_list = []
        self.arena_index: dict[int, int] = {}
        self.in_arenas = [
            [self._arena(t) if m == "batched" else None for _, t, m in k.params] for k in kernels
        ]
        self.out_arenas = [[self._arena(t) for t in k.outputs] for k in kernels]
        self.info = [
            KernelInfo(k.name, tuple(m == "batched" for _, _, m in k.params), len(k.outputs))
            for k in kernels
        ]
        self.row_of = np.zeros(1024, np.int64)
        self.arena_of = np.zeros(1024, np.int16)

    def _arena(self, t):
        a = self.pool.get(t.shape, t.dtype)
        if id(a) not in self.arena_index:
            self.arena_index[id(a)] = len(self.arena_list)
            self.arena_list.append(a)
        return a

    def reserve(self, n_values: int) -> None:
        """Room for value ids ``0..n_values-1``."""
        if n_values > len(self.row_of):
            size = max(n_values, 2 * len(self.row_of))
            self.row_of = np.resize(self.row_of, size)
            self.arena_of = np.resize(self.arena_of, size)

    # -- values ------------------------------------------------------------------------
    def upload(self, vid: int, value: np.ndarray) -> None:
        """Store an input tensor as value ``vid``."""
        a = self._arena(TensorType(value.shape, str(value.dtype)))
        row = a.alloc(1)
        a.buf[row] = self.backend.to_device(value.reshape(-1))
        self.reserve(vid + 1)
        self.row_of[vid] = row
        self.arena_of[vid] = self.arena_index[id(a)]

    def read(self, vid: int) -> np.ndarray:
        """A copy of value ``vid`` as a host NumPy array."""
        a = self.arena_list[self.arena_of[vid]]
        return self.backend.to_host(a.buf[self.row_of[vid]].reshape(a.shape))

    def output_bytes(self, dfg: DFG) -> int:
        """Bytes the outputs of every pending node will take (for the memory check)."""
        total = 0
        for k, r in enumerate(dfg.records):
            for a in self.out_arenas[k]:
                total += len(r) * a.width * a.dtype.itemsize
        return total

    # -- execution ---------------------------------------------------------------------
    def run(self, dfg: DFG, sched: Schedule, trace: Trace | None, t0: float, run_pass: int):
        """Execute every batch of ``sched`` in order; returns bytes gathered."""
        gathered = 0
        phase = None
        # gather fusion: kernels get (arena buffer, rows) and write into the output blocks
        fused = self.backend.fused_gather and self.pool.zero_copy
        take_device_ms = self.backend.take_device_ms
        phases = trace is not None and policy_info(sched.policy).keyed_levels
        for i, batch in enumerate(sched.batches):
            k = batch.kernel
            if phases:
                p = batch.level // STRIDE
                if phase is not None and p != phase:
                    trace.emit(PhaseBoundary(int(p)))
                phase = p
            rec = dfg.records[k][batch.nodes]
            n = len(rec)
            # outputs first: growing an arena moves its buffer, so inputs are taken after
            firsts = [arena.alloc(n) for arena in self.out_arenas[k]]
            args = []
            moved = 0
            for a, arena in enumerate(self.in_arenas[k]):
                col = rec[:, ARGS + a]
                if fused:  # host rows / ids: the backend uploads them in one copy
                    args.append(col if arena is None else (arena.buf, self.row_of[col]))
                elif arena is None:
                    args.append(self.backend.to_device(col))
                else:
                    x, copied = arena.gather(self.row_of[col])
                    moved += copied
                    args.append(x)
            views = [arena.rows(r0, n) for arena, r0 in zip(self.out_arenas[k], firsts)]
            start = time.perf_counter()
            try:
                if fused:  # the kernel writes straight into the output blocks
                    self.fns[k](n, *args, out=views)
                else:
                    for view, out in zip(views, self.fns[k](n, *args)):
                        view[...] = out
            except IndexOutOfRange as err:
                raise InstanceError(
                    f"{self.kernels[k].name}: embedding {err}",
                    int(rec[err.position, INST]),
                    hint="token ids must lie in [0, vocabulary size)",
                ) from None
            base = rec[:, OUT]
            for j, (arena, r0) in enumerate(zip(self.out_arenas[k], firsts)):
                self.row_of[base + j] = np.arange(r0, r0 + n)
                self.arena_of[base + j] = self.arena_index[id(arena)]
            self.backend.synchronize()
            end = time.perf_counter()
            times = take_device_ms()
            device_ms = sum(times) if times is not None else None
            gathered += moved
            if trace is not None:
                name = self.kernels[k].name
                trace.emit(BatchFormed(i, name, n, batch.level, sched.policy, run_pass))
                trace.emit(
                    KernelLaunched(
                        i,
                        name,
                        n,
                        (start - t0) * 1e3,
                        (end - t0) * 1e3,
                        moved,
                        self.backend.name,
                        device_ms,
                    )
                )
        return gathered
