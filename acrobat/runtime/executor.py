"""The executor: runs a schedule batch by batch on a backend, in arena memory.

For each batch: gather every tensor argument with ONE index array (a view, no copy,
when the rows are already contiguous — outputs of one batch are one block, so this is
common), pass host arguments as one int array, launch the kernel once with the batch's
weights shared, and write its outputs into a fresh contiguous block of rows.

A flush's bookkeeping is done before its first launch (:meth:`Executor.plan`): which rows
every output takes, and every input's rows, in a few vectorized operations per kernel
rather than several per launch (BiRNN small b64: the executor's own time per run 3.05 ->
1.9 ms, measured interleaved).
"""

from __future__ import annotations

import math
import time

import numpy as np

from acrobat.backends.base import Backend
from acrobat.backends.tiling import take_rows
from acrobat.codegen.numpy_kernels import block_start
from acrobat.codegen.records import ARGS, INST, KEY, OUT, READ_ARGMAX, STRIDE
from acrobat.errors import IndexOutOfRange, InstanceError
from acrobat.ir.types import TensorType
from acrobat.runtime.arena import ArenaPool
from acrobat.runtime.cancel import check as check_cancel
from acrobat.runtime.dfg import DFG, KernelInfo
from acrobat.runtime.schedule import Schedule


class Executor:
    """Value storage (value id -> arena row) and batch execution for one program."""

    def __init__(
        self,
        kernels,
        fns,
        pool: ArenaPool,
        backend: Backend,
        groups=(),
        flush=None,
        new_int64s=None,
    ):
        self.kernels = kernels  # KernelSpec list, index = kernel id
        # the running run's cancel flag (acrobat.runtime.cancel), checked before each
        # launch of the Python loop; the native flush reads its own copy (set_cancel)
        self.cancel: bytearray | None = None
        # the engine's native flush functions (acrobat.runtime.engines), or None: the
        # Python loop of plan() and launch() runs every flush
        self.new_int64s = new_int64s
        self.fns = fns
        self.pool = pool
        self.backend = backend
        # twin kernels' groups (acrobat.codegen.twins): DFG kernels after the program's,
        # each ``(member kernel ids, fn)``; a group's nodes are its members', whose records
        # :meth:`join_twins` moves there with the member as a last column. A group without
        # a kernel of its own (the backend has none) runs its members apart.
        self.groups = [(tuple(m), fn or _members_apart(m, fns)) for m, fn in groups]
        self.names = [k.name for k in kernels] + [
            "+".join(kernels[k].name for k in m) for m, _ in self.groups
        ]
        self.n_kernels = len(kernels)
        spec = [kernels[m[0]] for m, _ in self.groups]  # twins: the first member's signature
        kernels = list(kernels) + spec
        fns = list(fns) + [fn for _, fn in self.groups]
        self.arena_list = []
        self.upload_arenas: dict[tuple, object] = {}  # (shape, dtype) -> arena, for uploads
        self.arena_index: dict[int, int] = {}
        self.in_arenas = [
            [self._arena(t) if m == "batched" else None for _, t, m in k.params] for k in kernels
        ]
        self.out_arenas = [[self._arena(t) for t in k.outputs] for k in kernels]
        self.info = [
            KernelInfo(
                name,
                tuple(m == "batched" for _, _, m in k.params),
                len(k.outputs),
                int(i >= self.n_kernels),  # a twin group's rows end with the member
            )
            for i, (name, k) in enumerate(zip(self.names, kernels))
        ]
        # per kernel, what a launch needs: (fn, [(record column, input arena or None for
        # a host int)], [(output arena, its index in arena_list)], fused gather, the
        # record columns of the tensor inputs, the output arenas' indices)
        self.fused = fused = backend.fused_gather and pool.zero_copy
        # fused kernels that copy scattered rows on the host: count those bytes as gathered
        self.counts_copies = fused and backend.gather_copies
        self.plans = [
            (
                fn,
                [(ARGS + a, arena) for a, arena in enumerate(ins)],
                [(arena, self.arena_index[id(arena)]) for arena in outs],
                fused,
                tuple(ARGS + a for a, arena in enumerate(ins) if arena is not None),
                tuple(self.arena_index[id(arena)] for arena in outs),
            )
            for fn, ins, outs in zip(fns, self.in_arenas, self.out_arenas)
        ]
        host = backend.xp is np
        # the flush bookkeeping in one native call (acrobat/native/plan.c)
        self.native_plan = flush.plan_rows if flush is not None else None
        # fiber reads answered in one native call, on host arenas (float32/float64)
        self.native_reads = flush.read_answers if flush is not None and host else None
        # the outputs' lists of tensors read in one native call (flush.c read_rows)
        self.native_rows = flush.read_rows if flush is not None and host else None
        # a whole flush in one native call (flush.c run_flush): host arenas whose kernels
        # gather their own inputs and copy scattered rows (the NumPy backend); per DFG
        # kernel what it needs: (fn, outputs, arguments, a twin group's member count)
        self.native_flush = flush.run_flush if flush is not None and self.counts_copies else None
        # the acrobat policy's schedule and run_flush in one native call (flush.c
        # schedule_flush): the batches never Python objects
        self.native_schedule_flush = flush.schedule_flush if self.native_flush is not None else None
        self.flush_specs = (
            [
                (
                    fn,
                    tuple(
                        (arena, index, _reshape(arena), arena.row_bytes) for arena, index in outs
                    ),
                    tuple(
                        (col, arena, _reshape(arena), arena.row_bytes)
                        if arena is not None
                        else (col, None, None, 0)
                        for col, arena in ins
                    ),
                    len(self.groups[k - self.n_kernels][0]) if k >= self.n_kernels else 0,
                )
                for k, (fn, ins, outs, *_) in enumerate(self.plans)
            ]
            if self.native_flush is not None
            else []
        )
        # the backend's synchronize, timed with each kernel; None: a no-op (host kernels)
        self.sync = None if backend.xp is np and backend.name == "numpy" else backend.synchronize
        self.out_bytes = [sum(a.row_bytes for a in outs) for outs in self.out_arenas]
        self.max_out_bytes = max(self.out_bytes, default=0)  # the most a node's outputs take
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

    def join_twins(self, recs: list[np.ndarray]) -> list[np.ndarray]:
        """The records of a flush per DFG kernel (``recs``: per program kernel): the
        records of a twin group's members move to the group, each row with its member's
        place in the group as a last column (the scheduler then batches them together:
        one launch runs both RNN directions' step)."""
        out = list(recs)
        for members, _ in self.groups:
            parts = [(j, recs[k]) for j, k in enumerate(members) if len(recs[k])]
            width = recs[members[0]].shape[1]
            if not parts:
                out.append(np.zeros((0, width + 1), np.int64))
                continue
            rows = np.empty((sum(len(r) for _, r in parts), width + 1), np.int64)
            at = 0
            for j, r in parts:
                rows[at : at + len(r), :width] = r
                rows[at : at + len(r), width] = j
                at += len(r)
                out[members[j]] = recs[members[j]][:0]
            out.append(rows)
        return out

    def node_name(self, k: int, row) -> str:
        """The kernel that recorded a node of DFG kernel ``k`` (record ``row``): a twin
        group's node is its member's."""
        if k < self.n_kernels:
            return self.names[k]
        return self.names[self.groups[k - self.n_kernels][0][int(row[-1])]]

    # -- values ------------------------------------------------------------------------
    def _upload_arena(self, value: np.ndarray):
        key = (value.shape, value.dtype)
        a = self.upload_arenas.get(key)
        if a is None:
            a = self.upload_arenas[key] = self._arena(TensorType(value.shape, str(value.dtype)))
        return a

    def upload_many(self, vids: list[int], values: list[np.ndarray], uniform: bool = False) -> None:
        """:meth:`upload` of every ``values[i]`` as value ``vids[i]`` (ids ascending): on
        host arenas, the tensors of one shape and dtype copied into their arena's rows
        with one ``np.concatenate`` (DRNN small b64: 128 input tensors, 4 -> 1 us each); the
        rows are the ones :meth:`upload` one by one would give; ``vids`` any sequence of ints
        (a range). ``uniform``: the caller knows the values are all of one shape and
        dtype (checked against one tensor type), so they are not compared here."""
        if not vids:
            return
        if self.backend.xp is not np:
            for vid, value in zip(vids, values):
                self.upload(vid, value)
            return
        shape, dtype = values[0].shape, values[0].dtype
        if uniform or all(v.shape == shape and v.dtype == dtype for v in values):
            groups = {(shape, dtype): None}  # (None: every value, in order)
        else:
            groups = {}
            for i, value in enumerate(values):
                groups.setdefault((value.shape, value.dtype), []).append(i)
        self.reserve(max(vids) + 1)
        ids = np.asarray(vids, np.int64)
        for (shape, _), idx in groups.items():
            mine, group = (ids, values) if idx is None else (ids[idx], [values[i] for i in idx])
            a = self._upload_arena(group[0])
            n = len(group)
            r0 = a.alloc(n)
            rows = a.buf[r0 : r0 + n]
            if shape:  # one concatenate along the first axis: (n * d0, ...) is (n, d0, ...)
                np.concatenate(group, out=rows.reshape((n * shape[0],) + shape[1:]))
            else:  # scalars
                np.stack(group, out=rows.reshape(n))
            self.row_of[mine] = np.arange(r0, r0 + n)
            self.arena_of[mine] = self.arena_index[id(a)]

    def upload(self, vid: int, value: np.ndarray) -> None:
        """Store an input tensor as value ``vid``."""
        a = self._upload_arena(value)
        row = a.alloc(1)
        a.buf[row] = self.backend.to_device(value.reshape(-1))
        self.reserve(vid + 1)
        self.row_of[vid] = row
        self.arena_of[vid] = self.arena_index[id(a)]

    def read(self, vid: int) -> np.ndarray:
        """A copy of value ``vid`` as a host NumPy array."""
        a = self.arena_list[self.arena_of[vid]]
        return self.backend.to_host(a.buf[self.row_of[vid]].reshape(a.shape))

    def read_many(self, vids: list[int]) -> list[np.ndarray]:
        """:meth:`read` of every id in ``vids``, in order, with one gather (and one copy to
        the host) per arena: each array is a row of that copy."""
        if not vids:
            return []
        ids = np.array(vids, np.int64)
        rows = self.row_of[ids]
        which = self.arena_of[ids]
        first = int(which[0])
        if (which == first).all():
            return self._rows_of(first, rows, vids)
        out: list = [None] * len(vids)
        groups: dict[int, list[int]] = {}
        for i, a in enumerate(which.tolist()):
            groups.setdefault(a, []).append(i)
        for a, idx in groups.items():
            for i, x in zip(idx, self._rows_of(a, rows[idx], [vids[i] for i in idx])):
                out[i] = x
        return out

    def read_heads(self, heads: list[list[int]]) -> list[np.ndarray]:
        """:meth:`read_many` of the value ids of every list in ``heads``, flattened in
        order: on host arenas one native call (``read_rows``, flush.c) that copies the
        rows and makes their views, where the ids are all in one arena."""
        if self.native_rows is not None:
            got = self.native_rows(self.arena_list, heads, self.row_of, self.arena_of)
            if got is not None:
                return got
        return self.read_many([i for h in heads for i in h])

    def _rows_of(self, a: int, rows: np.ndarray, vids: list[int]) -> list[np.ndarray]:
        arena = self.arena_list[a]
        shape = arena.shape
        if not shape or math.prod(shape) != arena.width:  # a scalar, or no elements
            return [self.read(v) for v in vids]
        xp = self.backend.xp
        data = arena.buf.take(rows if xp is np else xp.asarray(rows), axis=0)
        if xp is not np:
            data = self.backend.to_host(data)
        return list(data.reshape((len(rows),) + shape))

    def answer_reads(self, ops: list[int], vids: list[int]) -> list:
        """What fiber reads get, in order: for ``READ_ITEM`` the float of a one-element
        tensor, for ``READ_ARGMAX`` the flat argmax (an int) of a tensor. On host arenas
        of floats one call of the native module's ``read_answers`` (``plan.c``) reads
        them in place (StackRNN large b64, 95 rounds a run: 1.5-2 ms a run in NumPy);
        else one copy to the host per (arena, op), not one per read."""
        if not vids:
            return []
        native_reads = self.native_reads
        if native_reads is not None:  # host arenas of floats: one native call
            answers = native_reads(
                self.arena_list, ops, vids, self.row_of, self.arena_of, READ_ARGMAX
            )
            if answers is not None:
                return answers
        return self.answer_reads_numpy(ops, vids)

    def answer_reads_numpy(self, ops: list[int], vids: list[int]) -> list:
        """:meth:`answer_reads` without the native call (where it declined: arenas it
        does not read in place)."""
        if not vids:
            return []
        ids = np.array(vids, np.int64)
        rows = self.row_of[ids]
        which = self.arena_of[ids]
        first = int(which[0])
        if ops.count(ops[0]) == len(ops) and (which == first).all():
            # the common case (every read of a fiber program's round alike): one group,
            # its answers in order as they come (64 reads: 5.4 us against 14.3 through the
            # grouping below, timeit; StackRNN small b64 answers ~100 rounds a run)
            return self._answers(first, ops[0], rows)
        where: dict[tuple[int, int], list[int]] = {}
        for i, key in enumerate(zip(which.tolist(), ops)):
            where.setdefault(key, []).append(i)
        answers: list = [None] * len(vids)
        for (a, op), idx in where.items():
            for i, v in zip(idx, self._answers(a, op, rows[idx])):
                answers[i] = v
        return answers

    def _answers(self, a: int, op: int, rows: np.ndarray) -> list:
        """The answers to reads ``op`` of rows ``rows`` of arena ``a``, in order."""
        arena = self.arena_list[a]
        xp = self.backend.xp
        if xp is np:  # take copies already: no second copy to the host
            data = arena.buf.take(rows, axis=0)
        else:
            data = self.backend.to_host(arena.buf.take(xp.asarray(rows), axis=0))
        if op == READ_ARGMAX:
            return data.argmax(axis=1).tolist()
        if arena.width == 1 and 0 not in arena.shape:  # one element
            return data[:, 0].tolist()
        # not one element: float() raises as it would for a single read
        return [float(v.reshape(arena.shape).reshape(())) for v in data]

    def output_bytes(self, dfg: DFG) -> int:
        """Bytes the outputs of every pending node will take (for the memory check)."""
        return sum(len(r) * b for r, b in zip(dfg.records, self.out_bytes) if b)

    # -- execution ---------------------------------------------------------------------
    def run(self, dfg: DFG, sched: Schedule, log: list | None = None):
        """Execute every batch of ``sched`` in order; returns ``(bytes gathered, seconds
        spent in kernel calls)`` (see :meth:`launch`). ``log``: a traced run's flush log
        (:mod:`acrobat.runtime.flushlog`), each launch appended to it."""
        if self.native_flush is not None:
            done = self.run_native(dfg, sched, log)
            if done is not None:
                return done
        launch, cancel = self.launch, self.cancel
        gathered = 0
        kernel_s = 0.0
        if log is None:
            for step in self.plan(dfg, sched):
                check_cancel(cancel)
                moved, start, end = launch(*step)
                gathered += moved
                kernel_s += end - start
            self.backend.take_device_ms()  # drop the device times nobody reads
            return gathered, kernel_s
        clock = time.perf_counter
        begin = clock()
        for i, step in enumerate(self.plan(dfg, sched)):
            check_cancel(cancel)
            moved, start, end = launch(*step)
            gathered += moved
            kernel_s += end - start
            times = self.backend.take_device_ms()
            done = clock()
            ms = sum(times) if times is not None else None
            log.append((i, step[0], step[1], -1, begin, start, end, done, moved, ms))
            begin = done
        return gathered, kernel_s

    def run_native(self, dfg: DFG, sched: Schedule, log: list | None = None):
        """:meth:`run` on host arenas as one call of the native module's ``run_flush``
        (``acrobat/native/flush.c``): the bookkeeping and the loop of :meth:`plan` and
        :meth:`launch`, without Python per batch (StackRNN small b64,
        ~100 flushes and 569 launches a run: the executor's own time 5.4 -> 2.2 ms a run).
        Same arguments to the same kernels in the same order; what a kernel raises
        propagates (an embedding id out of range as :meth:`launch` reports it). None when
        the schedule is not one it takes (a user's policy handing other index arrays): the
        Python path runs it."""
        batches = sched.batches
        if not batches:
            return 0, 0.0
        return self._flush_call(
            self.native_flush,
            batches,
            dfg.records,
            self.flush_specs,
            self.row_of,
            self.arena_of,
            OUT,
            log=log,
        )

    def run_leveled(self, dfg: DFG, table: np.ndarray, log: list | None = None):
        """The acrobat policy's leveled schedule of ``dfg`` (what ``list_schedule`` gives,
        ``table`` its kernel table) run as :meth:`run_native` runs it, in one native call
        (``schedule_flush``, ``acrobat/native/flush.c``): no Batch, Schedule or node array
        per batch (StackRNN small b64, ~100 flushes of ~6 batches a run). Returns ``(bytes
        gathered, kernel seconds, launches, schedule seconds)``, or None when the native
        scheduler declines the records (nothing done: the caller schedules them in
        Python)."""
        return self._flush_call(
            self.native_schedule_flush,
            dfg.records,
            table,
            KEY,
            OUT,
            STRIDE,
            self.flush_specs,
            self.row_of,
            self.arena_of,
            log=log,
        )

    def _flush_call(self, fn, *head, log: list | None = None):
        """``fn(*head, alloc, failed, sync[, log])``, a native flush (``run_flush`` or
        ``schedule_flush``), with an embedding id out of range that a kernel raised
        reported as :meth:`launch` reports it (the native call names the batch's kernel
        and record rows in ``failed``)."""
        failed = [None]
        try:
            if log is not None:
                return fn(*head, self.new_int64s, failed, self.sync, log)
            return fn(*head, self.new_int64s, failed, self.sync)
        except IndexOutOfRange as err:
            raise self.flush_error(failed, err) from None

    def flush_error(self, failed: list, err: IndexOutOfRange) -> InstanceError:
        """What an embedding id out of range raised in a native flush's kernel is reported
        as (the flush set ``failed[0]`` to the batch number, its record rows and kernel)."""
        _, rec, k = failed[0]
        return self._embedding_error(k, rec, err)

    def plan(self, dfg: DFG, sched: Schedule):
        """The bookkeeping of a whole flush done at once, then each launch's arguments.

        Allocation is deterministic (each batch's outputs take the next block of rows of
        their arena, in launch order), so before any launch: every output arena grows once
        to what the flush needs (no buffer moves while it runs), every output value gets
        its arena and row in one vectorized assignment per (kernel, output), and every
        batched input's rows are looked up in one gather per (kernel, input) — or all of
        that in one call of the native module for the whole flush (:meth:`_rows_native`;
        StackRNN small b64, ~100 flushes a run: this bookkeeping 7.0 -> 4.8 ms a run, the
        whole run 28.9 -> 26.0 ms measured interleaved). Each launch
        then only slices, and, on host arenas, hands an input whose rows are one block to
        the kernel as a view (no second look at its rows there). Yields, per batch in
        order, the arguments of :meth:`launch`: ``(kernel, rows n, its record rows, [per
        input: what the kernel takes], first output rows, bytes its scattered inputs
        copy)``."""
        batches = sched.batches
        if not batches:
            return
        plans = self.plans
        # pass 1 (Python ints): each batch's first output rows; each kernel's batches
        tops: dict[int, int] = {}
        arenas: dict[int, object] = {}
        firsts: list[tuple[int, ...]] = []
        sizes: list[int] = []
        of_kernel: dict[int, list[int]] = {}
        for i, batch in enumerate(batches):
            k = batch.kernel
            n = len(batch.nodes)
            sizes.append(n)
            of_kernel.setdefault(k, []).append(i)
            first = []
            for arena, index in plans[k][2]:
                top = tops.get(index)
                if top is None:
                    arenas[index] = arena
                    top = arena.top
                first.append(top)
                tops[index] = top + n
            firsts.append(tuple(first))
        for index, top in tops.items():  # grow once; the rows are those assigned above
            arena = arenas[index]
            arena.alloc(top - arena.top)
        native = self.native_plan
        if native is not None:
            recs, inputs, segs = self._rows_native(native, dfg, batches, of_kernel, sizes, firsts)
        else:
            recs, inputs, segs = self._rows_numpy(dfg, batches, of_kernel, sizes, firsts)
        counts = self.counts_copies
        fused = self.fused
        at = dict.fromkeys(of_kernel, 0)  # each kernel's next batch
        n_kernels = self.n_kernels
        for i, batch in enumerate(batches):
            k = batch.kernel
            rec, offsets = recs[k]
            b = at[k]
            at[k] = b + 1
            s, e = offsets[b], offsets[b + 1]
            if s == e:  # a batch of no nodes (a user's policy may form one): nothing to run
                yield k, 0, rec[s:e], [], firsts[i], 0
                continue
            moved = 0
            args = []
            for rows, arena, starts in inputs[k]:
                if arena is None or not fused:  # host ids, or rows launch() gathers
                    args.append(rows[s:e])
                    continue
                if counts:  # host arenas: rows that are one block are passed as a view
                    r0 = block_start(rows[s:e]) if starts is None else starts[b]
                    if r0 is not None and r0 >= 0:
                        args.append(arena.rows(r0, e - s))
                        continue
                    moved += (e - s) * arena.row_bytes
                args.append((arena.buf, rows[s:e]))  # the kernel gathers them
            if k >= n_kernels:  # a twin group's kernel: which member's rows are where
                yield k, e - s, rec[s:e], args, firsts[i], moved, segs[k][1][b]
            else:
                yield k, e - s, rec[s:e], args, firsts[i], moved

    def _rows_numpy(self, dfg: DFG, batches, of_kernel: dict, sizes: list, firsts: list):
        """:meth:`plan`'s integer work in NumPy, vectorized per kernel (the native
        module's ``plan_rows`` does the same in one call per flush): per kernel its
        records in launch order and each batch's offset into them; per kernel, per input,
        ``(rows or host ids, arena or None, None)``; the twin groups' :meth:`_members`."""
        records = dfg.records
        plans = self.plans
        row_of, arena_of = self.row_of, self.arena_of
        # every output value's arena and row, vectorized per kernel
        recs: dict[int, tuple] = {}  # kernel -> (its records in launch order, offsets)
        n_kernels = self.n_kernels
        segs: dict[int, tuple] = {}  # twin group -> (records, per batch its (member, rows))
        for k, idx in of_kernel.items():
            rec = records[k][_nodes(batches, idx)]
            ns = [sizes[i] for i in idx]
            offsets = _offsets(ns)
            if k >= n_kernels:  # a twin group: each batch's rows by member, and how many
                segs[k] = self._members(k, rec, ns)
                rec = segs[k][0]
            base = rec[:, OUT]
            total = offsets[-1]
            for j, (_, index) in enumerate(plans[k][2]):
                r0s = [firsts[i][j] for i in idx]
                if len(idx) == 1:
                    rows = np.arange(r0s[0], r0s[0] + total)
                else:  # block b: r0s[b] + (position - offsets[b])
                    shift = np.repeat(
                        np.array(r0s, np.int64) - np.array(offsets[:-1], np.int64), ns
                    )
                    rows = np.arange(total) + shift
                ids = base + j if j else base
                row_of[ids] = rows
                arena_of[ids] = index
            recs[k] = (rec, offsets)
        # every batched input's rows (after every output is placed: an input may be the
        # output of another kernel's batch of this flush)
        inputs: dict[int, list] = {}
        for k, (rec, _) in recs.items():
            cols = []
            for col, arena in plans[k][1]:
                if arena is None:  # host ints: the record column itself
                    cols.append((rec[:, col], None, None))
                else:
                    cols.append((row_of[rec[:, col]], arena, None))
            inputs[k] = cols
        return recs, inputs, segs

    def _rows_native(self, plan_rows, dfg: DFG, batches, of_kernel: dict, sizes, firsts):
        """:meth:`_rows_numpy` as one call of the native module's ``plan_rows``
        (``acrobat/native/plan.c``), which also says which batches' input rows are one
        block (``starts[b]``: the first row, or -1)."""
        records = dfg.records
        plans = self.plans
        n_kernels = self.n_kernels
        recs: dict[int, tuple] = {}
        segs: dict[int, tuple] = {}
        jobs = []
        order = []
        for k, idx in of_kernel.items():
            ns = [sizes[i] for i in idx]
            offsets = _offsets(ns)
            total = offsets[-1]
            table, nodes = records[k], _nodes(batches, idx)
            if k >= n_kernels:  # a twin group: its records reordered by member first
                segs[k] = self._members(k, table[nodes], ns)
                rec = np.ascontiguousarray(segs[k][0])
                table = nodes = None
            else:  # (a user's policy may hand any index array)
                nodes = np.ascontiguousarray(nodes, dtype=np.int64)
                table = np.ascontiguousarray(table, dtype=np.int64)
                rec = np.empty((total, table.shape[1]), np.int64)
            ins, cols = plans[k][1], plans[k][4]
            rows = np.empty((len(cols), total), np.int64)
            jobs.append(
                (
                    table,
                    nodes,
                    rec,
                    ns,
                    [firsts[i] for i in idx],
                    plans[k][5],
                    cols,
                    rows,
                )
            )
            order.append((k, rec, offsets, ins, rows))
        starts_of = plan_rows(jobs, self.row_of, self.arena_of, OUT)
        inputs: dict[int, list] = {}
        for (k, rec, offsets, ins, rows), starts in zip(order, starts_of):
            recs[k] = (rec, offsets)
            n_in = len(rows)
            cols = []
            i = 0
            for col, arena in ins:
                if arena is None:
                    cols.append((rec[:, col], None, None))
                else:
                    cols.append((rows[i], arena, starts[i::n_in]))
                    i += 1
            inputs[k] = cols
        return recs, inputs, segs

    def _members(self, k: int, rec: np.ndarray, ns: list[int]) -> tuple:
        """A twin group's records of a flush (``rec``, its batches' ``ns`` rows in turn)
        with each batch's rows ordered by member (stable), and per batch its ``(member,
        rows)`` pairs in that order."""
        m = len(self.groups[k - self.n_kernels][0])
        member = rec[:, -1]
        key = np.repeat(np.arange(0, len(ns) * m, m), ns) + member  # batch * m + member
        order = np.argsort(key, kind="stable")  # (a quarter faster than lexsort)
        counts = np.bincount(key, minlength=len(ns) * m).reshape(len(ns), m)
        per_batch = [tuple((j, c) for j, c in enumerate(row) if c) for row in counts.tolist()]
        return rec[order], per_batch

    def launch(
        self,
        k: int,
        n: int,
        rec: np.ndarray,
        cols: list,
        firsts: tuple,
        moved: int,
        segs: tuple | None = None,
    ) -> tuple[int, float, float]:
        """Run kernel ``k`` once on ``n`` nodes (``rec``: their record rows), as
        :meth:`plan` prepared it: ``cols`` per input what a fused kernel takes (a view of
        rows that are one block of a host arena, else ``(arena buffer, rows)``; a host
        int's ids), or for an unfused one the rows (or ids), gathered here; ``firsts``
        the first row of each output's block (allocated); ``moved`` the bytes a fused
        kernel copies for inputs that are not one block. Calls the kernel with its outputs
        written into those blocks. Returns ``(bytes gathered, start, end)``:
        ``perf_counter`` times around the kernel's own work — the call (in the unfused
        convention, also copying its results into the arena block) and the backend's
        synchronize."""
        if n == 0:  # no nodes: the kernel is not called
            now = time.perf_counter()
            return 0, now, now
        fn, ins, outs, fused = self.plans[k][:4]
        if fused:  # as plan() made them: views, (arena buffer, rows) pairs, host ids
            args = cols
        else:
            args = []
            for (_, arena), rows in zip(ins, cols):
                if arena is None:  # host ints
                    args.append(self.backend.to_device(rows))
                else:
                    x, copied = arena.gather(rows)
                    moved += copied
                    args.append(x)
        clock = time.perf_counter
        try:
            if fused:  # the kernel writes straight into the output blocks
                views = [arena.rows(r0, n) for (arena, _), r0 in zip(outs, firsts)]
                start = clock()
                if segs is None:
                    fn(n, *args, out=views)
                else:  # a twin group's kernel: (member, rows) in row order
                    fn(n, *args, out=views, _segs=segs)
            elif segs is None:
                start = clock()
                results = fn(n, *args)
                for (arena, _), r0, out in zip(outs, firsts, results):
                    arena.rows(r0, n)[...] = out
            else:  # a twin group's batch: each member's kernel on its rows
                members = self.groups[k - self.n_kernels][0]
                start = clock()
                at = 0
                for m, c in segs:
                    results = self.plans[members[m]][0](c, *[a[at : at + c] for a in args])
                    for (arena, _), r0, out in zip(outs, firsts, results):
                        arena.rows(r0 + at, c)[...] = out
                    at += c
            self.backend.synchronize()
            end = clock()
        except IndexOutOfRange as err:
            raise self._embedding_error(k, rec, err) from None
        return moved, start, end

    def _embedding_error(self, k: int, rec: np.ndarray, err: IndexOutOfRange) -> InstanceError:
        """What a batch of kernel ``k`` (record rows ``rec``) raises for an embedding id
        out of range: the instance of the node at fault, and the kernel that recorded it."""
        return InstanceError(
            f"{self.node_name(k, rec[err.position])}: embedding {err}",
            int(rec[err.position, INST]),
            hint="token ids must lie in [0, vocabulary size)",
        )


def _reshape(arena) -> tuple | None:
    """The row shape a view of ``arena``'s rows takes (``[n, *shape]``), or None when its
    rows are already that (a vector's)."""
    return None if arena.shape == (arena.width,) else tuple(arena.shape)


def _nodes(batches, idx: list[int]):
    """The record numbers of batches ``idx`` (one kernel's, in launch order), in turn."""
    if len(idx) == 1:
        return batches[idx[0]].nodes
    return np.concatenate([batches[i].nodes for i in idx])


def _offsets(ns: list[int]) -> list[int]:
    """Where each of batches of ``ns`` nodes starts in their kernel's records of a
    flush, and the total last."""
    offsets = [0]
    for n in ns:
        offsets.append(offsets[-1] + n)
    return offsets


def _members_apart(members, fns):
    """A twin group's kernel for a backend without group kernels, in the fused
    convention: each member's kernel on its rows of the batch (``_segs``: ``(member,
    rows)`` in row order)."""
    member_fns = [fns[k] for k in members]

    def call(n, *args, out=None, _segs=()):
        at = 0
        for m, c in _segs:
            part = [take_rows(a, at, at + c) for a in args]
            member_fns[m](c, *part, out=[o[at : at + c] for o in out])
            at += c

    return call
