"""``acrobat.run``: run a batch of instances of a compiled program, batched.

Steps per run (one method of :class:`Runtime` each): check the options, upload the
inputs and weights, record every instance's DFG nodes by running the generated host
program (with inline depths), flush — records to a DFG, the scheduling policy's batches,
the executor runs them on the backend in arena memory — then read the outputs back and
report statistics and the trace. Tensor-dependent programs run as fibers, with one flush
each time every instance waits for a tensor value. Everything is timed (``gen`` = DFG
construction, ``sched``, ``exe``) into :class:`RunStats` and recorded in the trace.

What depends only on the program and the backend (compiled kernels, the host program's
namespace, arenas) is prepared once, by :func:`prepare`, and reused by every run.
"""

from __future__ import annotations

import contextlib
import os
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from acrobat.backends import get_backend
from acrobat.backends.tiling import CancelSlot
from acrobat.codegen.host import LOOP_MESSAGE
from acrobat.codegen.host_c import MODULE_PLACEHOLDER
from acrobat.codegen.records import ARGS, INST, KEY, OUT, READ_ARGMAX, REDUCE, STRIDE, float_bits
from acrobat.codegen.twins import find_twins
from acrobat.errors import AcrobatNameError, IndexOutOfRange, InstanceError, RunCancelled
from acrobat.ir.list_ops import LIST_REDUCTIONS
from acrobat.ir.nodes import OpCall
from acrobat.ir.traversal import walk
from acrobat.ir.types import TensorType
from acrobat.ir.values import AdtValue, entry_args_all
from acrobat.reprs import html_summary, text_summary
from acrobat.runtime import flushlog, segments
from acrobat.runtime.arena import ArenaPool
from acrobat.runtime.cancel import CancelToken
from acrobat.runtime.cancel import check as check_cancel
from acrobat.runtime.dfg import DFG
from acrobat.runtime.direct import DirectRunner
from acrobat.runtime.engines import Engine, choose
from acrobat.runtime.executor import Executor
from acrobat.runtime.fibers import HOST_FAILURES, Fiber, host_failure, run_fibers
from acrobat.runtime.leveling import jit_ms as leveling_jit_ms
from acrobat.runtime.leveling import kernel_table
from acrobat.runtime.leveling import warm as warm_leveling
from acrobat.runtime.process import borrowed
from acrobat.runtime.schedule import Schedule, builtin_acrobat, get_policy, lower_bound, schedule
from acrobat.runtime.strategy import StrategyChooser
from acrobat.runtime.threads import ThreadPlan, own_products
from acrobat.runtime.values import (
    array_bytes,
    from_handles_all,
    has_tensor,
    list_heads,
    to_handles,
)
from acrobat.trace import (
    HostProgramGenerated,
    HostSpan,
    KernelCompiled,
    NodeRecorded,
    RunSummary,
    ScheduleFormed,
    Trace,
)

TRACE_LEVELS = ("off", "batches", "nodes")

HOST_C_AFTER_MS = 20.0
"""Python host program time (ms, over a runtime's runs) after which the compiled host
program is built: a build costs ~0.5 s once (then the disk cache has it), and saves
~0.25 ms per ms of Python host program (measured: 4-7x faster on every non-fiber model)."""


class _LazyDFGs:
    """A run's DFGs (``RunStats._dfgs``) in the order its passes ran: those of the native
    fiber flush (``first``: a pass's records per DFG kernel, or the DFG of a pass it gave
    to Python), then those of the Python flushes (``then``). A DFG is made from records
    only when iterated (the lower bound, the gap report): a StackRNN run has ~100 passes
    and most runs never read them."""

    __slots__ = ("info", "first", "then")

    def __init__(self, info, first: list, then: tuple):
        self.info, self.first, self.then = info, first, then

    def __iter__(self):
        for x in self.first:
            yield x if isinstance(x, DFG) else DFG(self.info, x)
        yield from self.then

    def __len__(self) -> int:
        return len(self.first) + len(self.then)


class _LazyBound:
    """``RunStats.lower_bound``, computed from the run's DFGs when first read: the bound
    walks every dependency of every pass, which costs more than scheduling them, and most
    runs (benchmarks, ``trace_level="off"``) never read it."""

    def __get__(self, stats, owner=None) -> int:
        if stats is None:
            return 0  # the dataclass default
        if stats._bound is None:
            stats._bound = sum(lower_bound(dfg) for dfg in stats._dfgs)
            stats._dfgs = ()
        return stats._bound

    def __set__(self, stats, value: int) -> None:
        stats._bound, stats._dfgs = value, ()


@dataclass(eq=False)
class RunStats(Mapping):
    """Statistics of one run; also a read-only mapping (``stats["launches"]``, ``.get``,
    ``in``, ``dict(stats)``), as earlier versions returned a dict. Times are wall-clock
    milliseconds measured on the host.

    Attributes:
        gen_ms: DFG construction: running the host program (``host_ms``) plus turning
            its records into arrays.
        sched_ms: the scheduling policy, over every flush.
        exe_ms: executing the batches (gathers, launches, device synchronization).
        launches: kernel launches (batches), over every flush.
        nodes: DFG nodes recorded and executed.
        passes: flushes that executed at least one node (more than one only when the
            program reads tensor values: one per round of reads, plus the last).
        lower_bound: the batches no valid schedule can beat, summed over the flushes
            (:func:`acrobat.runtime.schedule.lower_bound`); computed when first read
            (the statistics keep the run's DFGs until then).
        bytes_gathered: bytes copied to gather batch inputs that were not contiguous.
        host_ms: the host program's own time, flushes excluded.
        total_ms: the whole run: uploads, host program, flushes, reading the outputs.
        kernel_ms: the kernels' own time: wall time inside the kernel calls (on the
            ``numpy`` backend also copying their results into arena rows; on a device
            backend the launch calls and the synchronize after each), summed over
            launches. Everything else in ``total_ms`` is host work: uploads, the host
            program, records to arrays, scheduling, gathers, the executor's bookkeeping,
            reading outputs. Timed with two ``perf_counter`` reads per launch (well under
            a microsecond).
        host_share: ``1 - kernel_ms / total_ms``: the fraction of the run that is host
            work (0 when ``total_ms`` is 0).
        host_us_per_launch: host work per launch, ``(total_ms - kernel_ms) * 1000 /
            launches``, in microseconds (0 without launches).
        mean_batch: ``nodes / launches`` (0 without launches).
        peak_arena_bytes: the most tensor memory the run held at once.
        instances: instances run.
        policy: the scheduling policy.
        backend: the backend that ran the kernels (``"numpy"`` when ``"auto"`` fell back).
        strategy: ``"batched"`` or ``"direct"`` (each instance straight through, kernels
            called at once; :mod:`acrobat.runtime.direct`). A direct run counts each kernel
            call as a node and a launch (``mean_batch`` 1) and its whole program in
            ``exe_ms``; it records no DFG (``gen_ms``, ``sched_ms``, ``host_ms``,
            ``passes``, ``lower_bound`` are 0) and does not time kernel calls apart from
            the program around them (``kernel_ms``, ``host_share`` and
            ``host_us_per_launch`` are 0: not measured).
        strategy_reason: why that strategy ran, in one sentence (what ``strategy="auto"``
            measured, see :mod:`acrobat.runtime.strategy`, or that it was asked for).
        blas: the BLAS library the NumPy kernels called (name, version, threading layer;
            ``"none"`` when ``threadpoolctl`` finds none it controls).
        blas_threads: the threads the run's matrix products ran with (0: not controlled,
            e.g. not a host-BLAS backend): the BLAS's, or, when ``threads`` ends with
            "products on acrobat's two native threads, the BLAS on one", the native
            kernel's two (:class:`acrobat.runtime.threads.ThreadPlan`).
        threads: why that many (the policy of :mod:`acrobat.runtime.threads`:
            ``"auto: N of M (others busy ...)"`` or ``"forced N (threads=N)"``, and where
            the products ran when not on the BLAS).
        jit_ms: what this process spent compiling, or loading from disk caches, the
            native module (:mod:`acrobat.native`, C: the small-row GEMM, the flush
            runner, the leveling scheduler) or, where it is off, numba's leveling
            scheduler (:mod:`acrobat.runtime.leveling`): paid once, when the first program
            that needs them is prepared, and never inside a run's ``total_ms`` (0 when
            nothing needed them); plus what this runtime's compiled host program cost to
            build or load (``host_code``), paid before the run that first uses it starts
            its clock.
        native: the native kernel's state in this process (:func:`acrobat.native.status`:
            ``"built"``, ``"loaded"`` from the disk cache, ``"not loaded"``, or ``"off
            (why)"``); when off, every product runs on NumPy's ``matmul``.
        host_code: which host program recorded the run's DFG: ``"c"`` (the compiled one,
            :mod:`acrobat.codegen.host_c`) or ``"python"``, with why when the C program
            was not used (``"python (ACROBAT_HOST_C=0)"``, ``"python (the c run stopped:
            ...; the python program ran instead)"``, or ``"... ran from the start)"`` when
            a fiber run had executed a flush, ...). Empty for a direct run.
        engine: the engine that ran, and why (:mod:`acrobat.runtime.engines`:
            ``"native (auto: the native core is loaded)"``, ``"reference (asked for
            (ACROBAT_ENGINE=reference))"``, ...).
    """

    gen_ms: float = 0.0
    sched_ms: float = 0.0
    exe_ms: float = 0.0
    launches: int = 0
    nodes: int = 0
    passes: int = 0
    lower_bound: int = _LazyBound()  # type: ignore[assignment]
    bytes_gathered: int = 0
    host_ms: float = 0.0
    total_ms: float = 0.0
    kernel_ms: float = 0.0
    host_share: float = 0.0
    host_us_per_launch: float = 0.0
    mean_batch: float = 0.0
    peak_arena_bytes: int = 0
    instances: int = 0
    policy: str = ""
    backend: str = ""
    strategy: str = "batched"
    strategy_reason: str = ""
    blas: str = ""
    blas_threads: int = 0
    threads: str = ""
    jit_ms: float = 0.0
    native: str = ""
    host_code: str = ""
    engine: str = ""

    def __getitem__(self, key: str) -> Any:
        if key not in _STAT_NAMES:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(_STAT_NAMES)

    def __len__(self) -> int:
        return len(_STAT_NAMES)

    def _summary(self) -> list[tuple[str, object]]:
        return [
            ("policy", self.policy),
            ("backend", self.backend),
            ("strategy", self.strategy),
            ("instances", self.instances),
            ("launches", f"{self.launches} (lower bound {self.lower_bound})"),
            ("nodes", self.nodes),
            ("total", f"{self.total_ms:.2f} ms"),
            ("kernels", f"{self.kernel_ms:.2f} ms"),
            ("host share", f"{self.host_share:.0%}"),
        ]

    def __repr__(self) -> str:  # dict(stats) lists every field
        return text_summary("RunStats", self._summary())

    def _repr_html_(self) -> str:
        return html_summary("RunStats", self._summary())


_STAT_NAMES = tuple(f.name for f in fields(RunStats))


@dataclass
class RunResult:
    """Outputs (one per instance, like ``acrobat.evaluate``), the trace and statistics."""

    outputs: list[Any]
    trace: Trace
    stats: RunStats = field(default_factory=RunStats)

    def _summary(self) -> list[tuple[str, object]]:
        events = [("trace", f"{len(self.trace)} events")]
        return [("outputs", len(self.outputs)), *self.stats._summary(), *events]

    def __repr__(self) -> str:  # res.outputs and res.trace hold the rest
        return text_summary("RunResult", self._summary())

    def _repr_html_(self) -> str:
        return html_summary("RunResult", self._summary())


def _memory_limit() -> int:
    """Default tensor-memory limit: 80% of the memory available now."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 * 8 // 10
    except OSError:
        pass
    return 16 << 30


def _records(flat: list, width: int, kernel: str) -> np.ndarray:
    """Recorded nodes (their rows one after the other, ``width`` ints each) as an int64
    array; a host int that does not fit is the instance's error (the reference
    interpreter raises one for such a value too)."""
    try:  # fromiter: half the time of np.array on a list of ints (39k of them per BiRNN b64 run)
        return np.fromiter(flat, np.int64, len(flat)).reshape(len(flat) // width, width)
    except OverflowError:
        for row in zip(*[iter(flat)] * width):
            for value in row[ARGS:]:
                if not -(1 << 63) <= value < 1 << 63:
                    raise InstanceError(
                        f"{kernel}: host value {value} does not fit in 64 bits",
                        row[INST],
                        hint="token ids and other host ints passed to tensor ops must lie "
                        "in the int64 range",
                    ) from None
        raise


class _PendingUploads:
    """A value store that only notes what :func:`to_handles` uploads (value ids ascending),
    for one ``Executor.upload_many`` of them all."""

    __slots__ = ("vids", "values")

    def __init__(self) -> None:
        self.vids: list[int] = []
        self.values: list[np.ndarray] = []

    def upload(self, vid: int, value: np.ndarray) -> None:
        self.vids.append(vid)
        self.values.append(value)


class _StartAgain(Exception):
    """The compiled fiber program stopped after a flush had executed nodes: the run
    starts over with the Python program (the message says why)."""


class _RunState:
    """What one run accumulates: its record lists, the passes it made, times."""

    __slots__ = (
        "policy",
        "trace",
        "traced",
        "node_events",
        "t0",
        "stats",
        "lists",
        "weights",
        "entry",
        "start",
        "next_value",
        "passes",
        "bounds",
        "spans",
        "flush_s",
        "arrays",
        "leveled_native",
        "mem_bound",
        "heads",
        "fast_records",
        "log",
    )

    def __init__(self, runtime: Runtime, policy: str, trace_level: str):
        self.policy = policy
        self.trace = Trace()
        self.traced = trace_level != "off"
        self.node_events = trace_level == "nodes"
        self.t0 = 0.0
        self.stats = RunStats(policy=policy, backend=runtime.backend.name)
        # each kernel's rows recorded since the last flush, one after the other in one
        # flat list of ints (a flush empties them)
        self.lists: list[list] = [[] for _ in runtime.kernels]
        self.weights: dict[str, int] = {}  # weights the host program uses as values -> id
        # the host program's closures for this run (made by Runtime.begin): its entry,
        # start(i, first value id = None: unchanged) and next_value() (the next free
        # value id)
        self.entry = self.start = self.next_value = None
        self.passes: list[tuple[DFG, Schedule | None]] = []  # schedules kept when traced
        self.bounds: list[int] = []  # lower bound of each pass
        self.spans: list[tuple[str, float, float]] = []  # a traced run's phases
        self.flush_s = 0.0  # seconds in flushes so far (an untraced run keeps no spans)
        # the C host program's records (per kernel an int64 array, [rows, width] or flat,
        # or None for none), used by the next flush instead of ``lists``; None when the
        # Python program recorded
        self.arrays: list | None = None
        # at least the arena bytes in use after the last flush (Runtime.check_memory); -1:
        # not counted yet this run
        self.mem_bound = -1
        self.heads: list | None = None  # a list-of-tensors result's elements (record)
        # the passes of the native fiber flush (Runtime.fiber_flush), in order: a pass's
        # records per DFG kernel, or the DFG of one it gave to Runtime.flush_records
        self.fast_records: list = []
        # a traced run's flush log (acrobat.runtime.flushlog): every launch and flush, in
        # order, whichever path ran them; the trace's events are made from it at the end
        self.log: list | None = [] if self.traced else None
        # the built-in acrobat policy's leveled schedule on an executor that runs it in the
        # same native call (Executor.run_leveled), traced or not; at trace level "nodes"
        # Python forms the same batches, to name each node's
        self.leveled_native = (
            not self.node_events
            and runtime.executor.native_flush is not None
            and runtime.executor.native_schedule_flush is not None
            and runtime.leveling
            and runtime.inline_depth
            and policy == "acrobat"
            and get_policy(policy) is builtin_acrobat
        )


class Runtime:
    """A compiled program prepared for one backend: kernels compiled, arenas kept.

    Holds no reference to the program itself (only to the parts a run reads), so the
    cache of :func:`prepare` lets a program go when its user drops it."""

    def __init__(self, prog, backend_name: str, engine: str | None = None):
        # the engine, chosen once for this runtime's life (acrobat.runtime.engines)
        self.engine: Engine = choose(engine)
        self.module = m = prog.module
        self.params = prog.params
        self.inline_depth = prog.options.inline_depth
        self.leveling = prog.options.leveling
        # the engine's native scheduler, for the schedules Python forms (other policies'
        # passes, a "nodes" trace), or None: the Python (numba) one, compiled now
        flush = self.engine.flush
        self.native_scheduler = (flush.list_schedule, self.engine.new_int64s) if flush else None
        if self.leveling and self.inline_depth and flush is None:
            warm_leveling()  # compile (or load) the scheduler now, not inside a run
        self.backend = get_backend(backend_name)
        self.host = prog.host_program
        self.kernel_map = prog.kernel_map  # where each kernel comes from, for traced runs
        self.base = prog.max_static_depth + 1  # where dynamic depths start
        self.kernels = [prog.kernels[name] for name in self.host.kernels]
        self.widths = [ARGS + len(k.params) for k in self.kernels]
        self.no_records = [np.zeros((0, w), np.int64) for w in self.widths]
        for r in self.no_records:
            r.flags.writeable = False
        self.fns, self.sources = [], {}
        # elementwise chains as one native call: a NumPy-backend option (CompileOptions)
        fused = {}
        # where a run's cancel flag is, for tiled launches to read between their tiles
        self.cancel_slot = CancelSlot()
        if self.backend.name == "numpy":  # (and the engine's products and chains)
            fused = {
                "fused_elementwise": prog.options.fused_elementwise,
                "products": self.engine.products,
                "cancel": self.cancel_slot,
            }
        for k in self.kernels:
            fn, src = self.backend.compile(k, prog.params, **fused)
            self.fns.append(fn)
            self.sources[k.name] = src
        self.pool = ArenaPool(xp=self.backend.xp, zero_copy=prog.options.gather_fusion)
        # twin kernels (acrobat.codegen.twins): one DFG kernel per group, run by the
        # backend's group kernel where it has one, else by its members apart
        groups = []
        if prog.options.twin_launches:
            make_group = getattr(self.backend, "compile_group", None)
            for t in find_twins([k.function for k in self.kernels]):
                members = [self.kernels[i] for i in t.members]
                if any(k.params != members[0].params for k in members):
                    continue
                made = None
                if make_group is not None and self.pool.zero_copy:
                    made = make_group(members, t.varying, prog.params, **fused)
                if made is not None:
                    self.sources["+".join(k.name for k in members)] = made[1]
                groups.append((t.members, made[0] if made else None))
        self.executor = Executor(
            self.kernels,
            self.fns,
            self.pool,
            self.backend,
            groups,
            flush=self.engine.flush,
            new_int64s=self.engine.new_int64s,
        )
        # twin groups' members, for the compiled fiber program's take_all to join their
        # records as Executor.join_twins does (None: no groups); a flush's empty records
        # per DFG kernel (the groups' after the program's)
        self.twin_members = tuple(tuple(m) for m, _ in groups) or None
        self.no_dfg_records = self.no_records + [
            np.zeros((0, self.widths[m[0]] + 1), np.int64) for m, _ in groups
        ]
        for r in self.no_dfg_records:
            r.flags.writeable = False
        self.level_table = kernel_table(self.executor.info)  # the native scheduler's table
        # BLAS threads per run (acrobat/runtime/threads.py); only host kernels call a BLAS
        packable = self.engine.products.packable
        self.threads = ThreadPlan(
            active=self.backend.xp is np,
            own=self.backend.name == "numpy"
            and own_products((k.function for k in self.kernels), packable),
            native=self.engine.threads,
        )
        ns: dict[str, Any] = {}
        exec(compile(self.host.source, "<host program>", "exec"), ns)  # generated by us
        self.make = ns["make"]
        self.entry_is_fiber = m.entry in self.host.fibers
        # list reductions (acrobat.ir.list_ops): answered with the fibers' reads
        self.list_reductions = any(
            isinstance(e, OpCall) and e.op in LIST_REDUCTIONS
            for f in m.functions
            for e in walk(f.body)
        )
        # the same host program compiled (acrobat.codegen.host_c): built once it pays
        # (see _host_c_ready), then used by every run; None while the Python one runs
        self.host_c = None
        # "1" (build it at the next run), "0" (never) or None (ACROBAT_HOST_C, else auto)
        self.host_c_mode: str | None = None
        self.host_c_ms = 0.0  # what building or loading it cost
        self.python_host_ms = 0.0  # the Python host program's time over this runtime's runs
        self.host_c_failed = False  # its build failed (the reason is in host_c_why)
        if self.host.c_source is None:
            self.host_c_why = "not emitted as C"
        elif self.engine.host_c is None:
            self.host_c_why = f"the {self.engine.name} engine runs no compiled host program"
        else:
            self.host_c_why = "not built yet"
        self.default_limit, self.limit_read_at = 0, -1e9
        self.tensor_params = [has_tensor(m, p.ty) for p in m.main.params]
        self.tensor_inputs = any(self.tensor_params)
        # every parameter a tensor (DRNN's two root vectors): an instance's value ids are
        # the next ones in parameter order, and its bytes are known from the types
        self.tensor_entry = bool(m.main.params) and all(
            isinstance(p.ty, TensorType) for p in m.main.params
        )
        self.entry_bytes = sum(p.ty.nbytes for p in m.main.params) if self.tensor_entry else 0
        # ...all of one shape and dtype: the checked inputs need no grouping to upload
        self.uniform_entry = self.tensor_entry and len({p.ty for p in m.main.params}) == 1
        self.tensor_output = has_tensor(m, m.main.ret)
        self.direct_program = prog.direct_program  # the direct strategy's program
        self.direct: DirectRunner | None = None  # made on the first direct run
        self.chooser = StrategyChooser()

    def run(
        self,
        instances: list,
        policy: str,
        trace_level: str,
        memory_limit: int | None,
        strategy: str = "auto",
        threads: int | None = None,
        cancel: CancelToken | None = None,
    ) -> RunResult:
        """Run ``instances``: the steps below, in order (or the direct strategy's run),
        holding the process (:func:`acrobat.runtime.process.borrowed`: runs take turns);
        ``cancel`` set meanwhile raises :class:`RunCancelled` (:mod:`acrobat.runtime.cancel`)."""
        self.check_options(policy, trace_level)
        flag = None if cancel is None else cancel.flag
        with borrowed(), self.cancellable(flag):
            check_cancel(flag)
            return self._run(instances, policy, trace_level, memory_limit, strategy, threads)

    @contextlib.contextmanager
    def cancellable(self, flag: bytearray | None):
        """While a run holds the process: its cancel flag where the executor's launch loop,
        the native flush and tiled launches (between tiles) read it, the previous one (an enclosing run's) put back after."""
        ex, native = self.executor, self.engine.flush
        before = ex.cancel
        ex.cancel = self.cancel_slot.flag = flag
        if native is not None:
            native.set_cancel(*((None,) if flag is None else (flag, RunCancelled)))
        try:
            yield
        finally:
            ex.cancel = self.cancel_slot.flag = before
            if native is not None:
                native.set_cancel(*((None,) if before is None else (before, RunCancelled)))

    def _run(self, instances, policy, trace_level, memory_limit, strategy, threads) -> RunResult:
        """:meth:`run`, the process held."""
        # -- strategy: batched or direct (acrobat.runtime.strategy) --
        how, why, group = self.chooser.choose(
            strategy, policy, self.backend.name, trace_level, memory_limit, len(instances)
        )
        if how == "direct":
            return self.run_direct(instances, policy, trace_level, why, group, threads)
        self._host_c_ready()  # a build, when one is due, happens before the run's clock
        st = _RunState(self, policy, trace_level)
        st.stats.strategy_reason = why
        self.begin(st, memory_limit)
        self.threads.begin(threads)
        try:
            t_up = time.perf_counter()
            args, first_free = self.upload(st, instances)
            upload = ("upload", t_up, time.perf_counter())
            try:
                raw = self.record(st, args, first_free)  # counts st.spans so far as flushes
            except _StartAgain as again:  # the C fibers stopped after executing something
                st = self.start_again(st, policy, trace_level, memory_limit, why)
                t_up = time.perf_counter()
                args, first_free = self.upload(st, instances)
                upload = ("upload", t_up, time.perf_counter())
                raw = self.record(st, args, first_free, python=True)
                st.stats.host_code = f"python ({again}; the python program ran from the start)"
            st.spans.append(upload)
            self.flush(st)
            t_out = time.perf_counter()
            outputs = self.outputs(raw, st.heads)
            st.spans.append(("outputs", t_out, time.perf_counter()))
            # drop the host program's values before the collector is back: it would walk
            # (and promote to an older generation) everything still referenced
            del raw, args
            st.entry = st.start = st.next_value = None
        finally:
            self.thread_stats(st.stats)
        self.finish(st, len(instances))
        self.chooser.observe(group, "batched", st.stats.total_ms, st.stats.nodes)
        return RunResult(outputs, st.trace, st.stats)

    def start_again(
        self, old: _RunState, policy: str, trace_level: str, memory_limit, why: str
    ) -> _RunState:
        """A fresh run state (statistics, trace, arenas) for running the instances again,
        whose clock still starts when the first attempt's did."""
        st = _RunState(self, policy, trace_level)
        st.stats.strategy_reason = why
        self.begin(st, memory_limit)
        st.t0 = old.t0
        return st

    def run_direct(
        self,
        instances: list,
        policy: str,
        trace_level: str,
        why: str,
        group,
        threads: int | None = None,
    ) -> RunResult:
        """Run ``instances`` with the direct strategy (:mod:`acrobat.runtime.direct`), under
        the same BLAS thread policy as a batched run."""
        if self.direct is None:
            self.direct = DirectRunner(self)
        stats = RunStats(policy=policy, backend=self.backend.name, strategy="direct")
        stats.strategy_reason = why
        self.threads.begin(threads)
        try:
            outputs, trace = self.direct.run(instances, stats, trace_level)
        finally:
            self.thread_stats(stats)
        if trace_level != "off":  # after thread_stats: the summary has the thread facts
            trace.emit(RunSummary(dict(stats)))
        self.chooser.observe(group, "direct", stats.total_ms, stats.nodes)
        return RunResult(outputs, trace, stats)

    # -- the steps of a run --------------------------------------------------------------
    @staticmethod
    def check_options(policy: str, trace_level: str) -> None:
        get_policy(policy)  # an unknown name raises, listing the registered policies
        if trace_level not in TRACE_LEVELS:
            raise AcrobatNameError(
                f"unknown trace level {trace_level!r}", hint=f"choose one of {TRACE_LEVELS}"
            )

    def begin(self, st: _RunState, memory_limit: int | None) -> None:
        """Trace the program's code, start the clock, empty the arenas, set the memory
        limit and instantiate the host program for this run."""
        if st.traced:
            st.trace.emit(HostProgramGenerated(self.host.source))
            for name, src in self.sources.items():
                st.trace.emit(KernelCompiled(name, self.backend.name, src))
                if name in self.kernel_map:
                    st.trace.emit(self.kernel_map[name])
        st.t0 = time.perf_counter()
        self.pool.reset()
        if memory_limit is None:
            if time.monotonic() - self.limit_read_at > 10.0:  # /proc/meminfo, at most every 10 s
                self.default_limit, self.limit_read_at = _memory_limit(), time.monotonic()
            memory_limit = self.default_limit
        self.pool.limit = memory_limit

    def python_program(self, st: _RunState) -> None:
        """Instantiate the Python host program for this run (``st.entry``, ``st.start``,
        ``st.next_value``), once, when it is to run: not for a run of the compiled one,
        whose closures (mutually recursive host functions: reference cycles) would be
        made for nothing and left to the cycle collector (29 objects a DRNN run)."""
        if st.entry is None:
            make = self.engine.maker  # ADT values (made in C by the native engine)
            st.entry, st.start, st.next_value = self.make(
                *(lst.extend for lst in st.lists),
                make,
                make.items,
                make.list,
                st.weights,
                float_bits,
            )

    def upload(self, st: _RunState, instances: list) -> tuple[list[list], int]:
        """Check every instance against the entry signature and upload its tensors and
        the weights the host program uses as values; returns the entry arguments (tensors
        as value ids) and the first free value id."""
        m, ex = self.module, self.executor
        checked = entry_args_all(m, instances, self.engine.checks)
        upload = [self.params[w] for w in self.host.weight_values]
        if self.tensor_entry:  # (checked: arrays of the parameters' shapes and dtypes)
            inputs = len(checked) * self.entry_bytes
        else:
            inputs = array_bytes(checked) if self.tensor_inputs else 0
        self.pool.check(inputs + sum(a.nbytes for a in upload))
        if self.tensor_entry:  # no walk: value ids in order, instance by instance
            n_p = len(m.main.params)
            nv = len(checked) * n_p
            args_list = [list(range(i, i + n_p)) for i in range(0, nv, n_p)]
            ex.upload_many(range(nv), [a for args in checked for a in args], self.uniform_entry)
        else:
            nv = 0
            args_list = []
            pending = _PendingUploads()  # the tensors, uploaded together below
            for args in checked:
                conv = []
                for p, a, tensors in zip(m.main.params, args, self.tensor_params):
                    if tensors:
                        a, nv = to_handles(m, a, p.ty, pending, nv)
                    conv.append(a)
                args_list.append(conv)
            ex.upload_many(pending.vids, pending.values)
        for name, value in zip(self.host.weight_values, upload):
            ex.upload(nv, value)
            st.weights[name] = nv
            nv += 1
        return args_list, nv

    def record(
        self, st: _RunState, args_list: list[list], first_free: int, python: bool = False
    ) -> list:
        """Run the host program for every instance: it records their DFG nodes. Fiber
        programs flush whenever every instance waits for a tensor value. Returns each
        instance's ``(result, depth)``. ``python``: the Python program, even when the C
        one is built."""
        tg = time.perf_counter()
        raw = None
        if self.host_c is not None and not python:
            record_c = self.record_c_fibers if self.entry_is_fiber else self.record_c
            raw = record_c(st, args_list, first_free)
        if raw is None:  # the Python program (not built, or the C one stopped)
            st.stats.host_code = st.stats.host_code or f"python ({self.host_c_why})"
            self.python_program(st)
            st.start(0, first_free)
            raw = self.record_python(st, args_list)
        t_host = time.perf_counter()
        in_flush = st.flush_s
        st.stats.host_ms = (t_host - tg - in_flush) * 1e3
        if st.stats.host_code != "c":
            self.python_host_ms += st.stats.host_ms
        st.spans.append(("graph_construction", tg, t_host))
        # a list-of-tensors result's elements, taken now, while the host program's cells
        # are in cache (after the last flush's kernels the walk costs ~6x more)
        if self.tensor_output:
            m, maker = self.module, self.engine.maker
            st.heads = list_heads(m, m.main.ret, [r[0] for r in raw], maker)
        return raw

    def _host_c_ready(self) -> None:
        """Build (or load from the disk cache) the compiled host program when it is due:
        at once under ``ACROBAT_HOST_C=1``; never under ``ACROBAT_HOST_C=0``; by default
        when the disk cache has it, or once this runtime's runs have spent
        :data:`HOST_C_AFTER_MS` in the Python host program (a build takes ~0.5 s; the
        small programs of a test or an exploration never pay it). ``host_c_mode`` ("1" or
        "0"), when set, overrides the environment for this runtime. A failed build leaves
        the Python program for good, saying why in ``RunStats.host_code``."""
        host_c = self.engine.host_c
        if self.host.c_source is None or host_c is None:
            return
        if self.host_c is not None:
            if self.host_c_mode == "0":  # switched off after it was built
                self.host_c, self.host_c_why = None, "switched off"
            return
        mode = self.host_c_mode or os.environ.get("ACROBAT_HOST_C", "auto")
        if mode == "0":
            self.host_c_why = "ACROBAT_HOST_C=0"
            return
        if self.host_c_failed:
            return
        src = self.host.c_source
        if mode != "1" and self.python_host_ms < HOST_C_AFTER_MS and not host_c.cached(src):
            self.host_c_why = (
                f"C build waits until the python program has run {HOST_C_AFTER_MS:.0f} ms"
            )
            return
        try:
            self.host_c, ms = host_c.build(src, MODULE_PLACEHOLDER)
            self.host_c_ms += ms
        except (OSError, ImportError) as err:
            self.host_c_failed = True  # not retried: the Python program for good
            self.host_c_why = f"no C build: {err}"

    def record_python(self, st: _RunState, args_list: list[list]) -> list:
        """:meth:`record` by the Python host program: each instance's ``(result, depth)``
        (a fiber program's instances run as fibers, flushing whenever all of them wait)."""
        if self.entry_is_fiber:
            roots = [Fiber(st.entry(*a, self.base), i) for i, a in enumerate(args_list)]
            raw, _ = run_fibers(roots, st.start, lambda: self.flush(st), self.reads(st))
            return raw
        raw = []
        cancel = self.executor.cancel
        for i, a in enumerate(args_list):
            check_cancel(cancel)
            st.start(i)
            try:
                raw.append(st.entry(*a, self.base))
            except HOST_FAILURES as err:
                raise host_failure(err, i) from None
        return raw

    def reads(self, st: _RunState, read_all=None):
        """``read_all`` for the fiber scheduler: the reads (``read_all``, by default the
        executor's), and a program's list reductions answered in their segmented launches
        (:mod:`acrobat.runtime.segments`)."""
        read_all = read_all or self.executor.answer_reads
        if not self.list_reductions:
            return read_all
        ex, stats = self.executor, st.stats
        spans = st.spans if st.log is not None else None

        def answer(ops: list[int], payloads: list) -> list:
            if REDUCE not in ops:
                return read_all(ops, payloads)
            return segments.answer(ex, stats, spans, ops, payloads, read_all)

        return answer

    def record_c(self, st: _RunState, args_list: list[list], first_free: int) -> list | None:
        """:meth:`record` by the compiled host program: each instance's ``(result,
        depth)``, its records kept in ``st.arrays``. None when the C run stopped, for
        whatever reason (a host failure, a value out of the int64 range, a recursion too
        deep for C): nothing of it is kept, and the Python program runs the instances
        from the start, raising its own error where there is one."""
        try:
            hs = self.host_c.make(AdtValue, tuple(st.weights[n] for n in self.host.weight_values))
            hs.start(0, first_free)
            entry, start, base = hs.entry, hs.start, self.base
            raw = []
            cancel = self.executor.cancel
            for i, a in enumerate(args_list):
                check_cancel(cancel)
                start(i)
                raw.append(entry(*a, base))
            st.arrays = [np.frombuffer(hs.records(k), np.int64) for k in range(len(st.lists))]
        except RunCancelled:
            raise
        except Exception as err:  # noqa: BLE001 - any failure: the Python program decides
            st.arrays = None
            st.stats.host_code = (
                f"python (the c run stopped: {type(err).__name__}: {err}; the python program "
                "ran instead)"
            )
            return None
        st.next_value = hs.next_value
        st.stats.host_code = "c"
        return raw

    def record_c_fibers(self, st: _RunState, args_list: list[list], first_free: int):
        """:meth:`record` of a fiber program by the compiled one (its fibers on C stacks):
        each instance's ``(result, depth)``; the records since the last flush kept in
        ``st.arrays``. None when it stopped before executing anything (then the Python
        program runs the instances, as :meth:`record_c`); raises :class:`_StartAgain`
        when it stopped after a flush had executed nodes; what a flush or a read raised
        (e.g. a memory limit) propagates as it would from the Python program."""
        hs = self.host_c.make(AdtValue, tuple(st.weights[n] for n in self.host.weight_values))
        hs.start(0, first_free)
        python_next_value, st.next_value = st.next_value, hs.next_value

        widths = tuple(self.widths)

        # twins joined as the records are taken (then no Executor.join_twins a flush)
        alloc = self.engine.new_int64s
        take = (alloc, widths) + ((self.twin_members,) if self.twin_members else ())
        ff = self.fiber_flush(st, hs, take)
        if ff is not None:  # the common flush in C (native fiber_flush), no Python per flush
            flush, read_all = ff, ff.read_all
        else:

            def flush():
                st.arrays = hs.take_all(*take)
                self.flush(st)

            read_all = self.executor.answer_reads

        read_all = self.reads(st, read_all)
        try:
            try:
                raw, _ = hs.run_fibers(args_list, self.base, flush, read_all)
            finally:
                if ff is not None:
                    self.fiber_flush_done(st, ff)
        except Exception as err:
            if hs.callback_failed():
                if ff is not None and isinstance(err, IndexOutOfRange) and ff.failed[0]:
                    raise self.executor.flush_error(ff.failed, err) from None
                raise
            why = f"the c run stopped: {type(err).__name__}: {err}"
            if st.passes or st.fast_records:
                raise _StartAgain(why) from None
            st.arrays = None
            st.next_value = python_next_value
            st.stats.host_code = f"python ({why}; the python program ran instead)"
            return None
        st.arrays = hs.take_all(*take)
        st.stats.host_code = "c"
        return raw

    def fiber_flush(self, st: _RunState, hs, take: tuple):
        """The compiled fiber program's flush as one native object (``fiber_flush`` in
        acrobat/native/flush.c), or None where the run needs the Python flush (traced, a
        policy other than the native acrobat one, no native module). It does what the
        flush closure and :meth:`flush` do where all is as usual (the records taken, room
        for their value ids, the memory bound under the limit, the native scheduler
        taking them) and hands the records to :meth:`flush_records` otherwise. Python per
        flush cost ~10 us in a StackRNN run (~100 flushes) with its caches cold."""
        if not st.leveled_native:  # (then the engine's flush is native)
            return None
        make = self.engine.flush.fiber_flush
        ex = self.executor
        joined = bool(self.twin_members)
        limit = self.pool.limit

        def slow(ff, recs: list, nodes: int) -> None:  # (ff passed in: no reference cycle)
            st.mem_bound = ff.mem_bound
            made = len(st.passes)
            try:
                self.flush_records(st, recs, nodes, joined, time.perf_counter())
            finally:
                ff.mem_bound = st.mem_bound
            # its DFG joins the fast passes' records, in the order the passes ran
            ff.passes.extend(dfg for dfg, _ in st.passes[made:])
            del st.passes[made:]

        ff = make(
            hs.take_all,
            take,
            hs.next_value,
            ex,
            self.no_dfg_records if joined else self.no_records,
            self.level_table,
            KEY,
            OUT,
            STRIDE,
            ex.flush_specs,
            self.engine.new_int64s,
            ex.sync,
            slow,
            ex.native_reads,
            ex.answer_reads_numpy,
            READ_ARGMAX,
            -1 if limit is None else int(limit),
            int(ex.max_out_bytes),
            ex.native_schedule_flush,
        )
        ff.mem_bound = st.mem_bound
        if st.log is not None:
            ff.log = st.log
        return ff

    def fiber_flush_done(self, st: _RunState, ff) -> None:
        """The statistics and passes of the flushes ``ff`` ran, into the run's."""
        stats = st.stats
        stats.bytes_gathered += ff.gathered
        stats.kernel_ms += ff.kernel_s * 1e3
        stats.gen_ms += ff.gen_s * 1e3
        stats.sched_ms += ff.sched_s * 1e3
        stats.exe_ms += ff.exe_s * 1e3
        stats.launches += ff.launches
        stats.nodes += ff.nodes
        st.flush_s += ff.flush_s
        st.mem_bound = ff.mem_bound
        st.fast_records = ff.passes  # (their DFGs are made only if read: _LazyDFGs)

    def flush(self, st: _RunState) -> None:
        """Schedule and execute every node recorded since the last flush: records ->
        DFG -> the policy's batches -> the executor."""
        check_cancel(self.executor.cancel)
        t1 = time.perf_counter()
        recs = self.no_records[:]
        nodes = 0
        joined = False
        if st.arrays is not None:  # the C host program's records
            if len(st.arrays) > len(recs):  # twins joined by take_all: per DFG kernel
                recs, joined = self.no_dfg_records[:], True
            for k, r in enumerate(st.arrays):
                if r is not None and len(r):
                    if r.ndim == 1:  # flat (the C program's records() at the end of a run)
                        r = r.reshape(-1, self.widths[k])
                    recs[k] = r
                    nodes += len(r)
            st.arrays = None
        for k, lst in enumerate(st.lists):
            if lst:  # only the rows recorded since the last flush are here
                recs[k] = r = _records(lst, self.widths[k], self.kernels[k].name)
                nodes += len(r)
                lst.clear()
        if not nodes:  # e.g. a second read of a value the last pass made: nothing to run
            return
        self.flush_records(st, recs, nodes, joined, t1)

    def flush_records(self, st: _RunState, recs: list, nodes: int, joined: bool, t1: float) -> None:
        """:meth:`flush` of ``recs`` (per program kernel, or per DFG kernel when
        ``joined``), ``nodes`` rows in all, taken at ``t1``."""
        ex, stats = self.executor, st.stats
        if ex.groups and not joined:  # twin kernels' nodes go to their group kernel
            recs = ex.join_twins(recs)
        dfg = DFG(ex.info, recs)
        t2 = time.perf_counter()
        done = None
        if st.leveled_native:  # schedule and launches in one native call
            ex.reserve(st.next_value())
            self.check_memory(st, dfg, nodes)
            done = ex.run_leveled(dfg, self.level_table, st.log)
        if done is not None:
            gathered, kernel_s, launches, sched_s = done
            sched = None
            t3 = t2 + sched_s
        else:
            sched = schedule(
                dfg, st.policy, self.inline_depth, self.leveling, self.native_scheduler
            )
            launches = len(sched.batches)
            t3 = time.perf_counter()
            if not st.leveled_native:  # (else reserved and checked before it declined)
                ex.reserve(st.next_value())
                self.check_memory(st, dfg, nodes)
            gathered, kernel_s = ex.run(dfg, sched, st.log)
        t4 = time.perf_counter()
        stats.bytes_gathered += gathered
        stats.kernel_ms += kernel_s * 1e3
        stats.gen_ms += (t2 - t1) * 1e3
        stats.sched_ms += (t3 - t2) * 1e3
        stats.exe_ms += (t4 - t3) * 1e3
        stats.launches += launches
        stats.nodes += nodes
        # an untraced run keeps only the DFG (for stats.lower_bound): its schedule, batches
        # and Batch tuples go now, not at the cycle collector's pass at the run's end
        st.passes.append((dfg, sched if st.traced else None))
        st.flush_s += t4 - t1
        if st.log is not None:
            flushlog.mark(st.log, t1, t2, t3, t4, nodes, launches, sched)

    def check_memory(self, st: _RunState, dfg: DFG, nodes: int) -> None:
        """Raise :class:`ArenaLimitError` before a flush whose outputs would take the arenas
        past the memory limit (``ArenaPool.check``). Counting the rows in use and the
        flush's output bytes costs ~4 us, which a fiber program's hundred flushes a run
        paid for nothing: the run keeps a bound instead (the rows in use when last counted,
        plus ``nodes`` times the largest outputs of a node for every flush since), and
        counts only when that bound passes the limit."""
        pool = self.pool
        if pool.limit is None:
            return
        extra = nodes * self.executor.max_out_bytes
        if st.mem_bound < 0 or st.mem_bound + extra > pool.limit:
            exact = self.executor.output_bytes(dfg)
            pool.check(exact)  # raises with the exact numbers
            st.mem_bound = pool.used_bytes() + exact
        else:
            st.mem_bound += extra

    def thread_stats(self, stats: RunStats) -> None:
        """Restore the BLAS threads and record what the run's kernels ran with: the BLAS
        and its threads, the native kernel's state and what the JIT parts cost."""
        plan = self.threads
        stats.blas_threads = plan.end()
        stats.blas, stats.threads = plan.blas.name if plan.blas else "", plan.why
        stats.jit_ms = leveling_jit_ms() + self.engine.load_ms() + self.host_c_ms
        stats.native = self.engine.status()
        stats.engine = self.engine.describe()

    def outputs(self, raw: list, heads: list | None = None) -> list:
        """Each instance's result, its tensors read back as host arrays (``heads``:
        :func:`~acrobat.runtime.values.list_heads` of the results, taken earlier)."""
        if not self.tensor_output:
            return [r[0] for r in raw]
        m = self.module
        values = [r[0] for r in raw]
        return from_handles_all(m, values, m.main.ret, self.executor, heads, self.engine.maker)

    def finish(self, st: _RunState, n_instances: int) -> None:
        """Complete the statistics and, when tracing, the trace."""
        stats = st.stats
        stats.total_ms = (time.perf_counter() - st.t0) * 1e3
        # DFG construction = the host program's run plus turning records into arrays
        stats.gen_ms += stats.host_ms
        stats.passes = sum(1 for dfg, _ in st.passes if dfg.num_nodes) + len(st.fast_records)
        stats.mean_batch = stats.nodes / stats.launches if stats.launches else 0.0
        host_ms = stats.total_ms - stats.kernel_ms
        stats.host_share = host_ms / stats.total_ms if stats.total_ms else 0.0
        stats.host_us_per_launch = host_ms * 1e3 / stats.launches if stats.launches else 0.0
        stats.peak_arena_bytes = self.pool.peak_bytes
        stats.instances = n_instances
        # the lower bound waits until someone reads it (see RunStats), unless traced
        stats._bound = None
        stats._dfgs = _LazyDFGs(
            self.executor.info, st.fast_records, tuple(dfg for dfg, _ in st.passes)
        )
        if st.traced:  # its events are made when the trace is first read (Trace.defer)
            ex, dfgs = self.executor, stats._dfgs
            st.trace.defer(lambda: _run_events(st, ex, dfgs))


def _run_events(st: _RunState, ex: Executor, dfgs) -> list:
    """A traced run's events, from what it measured (``st.log``, ``st.spans``): its
    launches, host phases, schedules (with their lower bounds, from ``dfgs``), the
    total and the summary."""
    stats = st.stats
    st.bounds = [lower_bound(dfg) for dfg in dfgs]
    if stats._bound is None:
        stats.lower_bound = sum(st.bounds)
    trace, t0 = Trace(), st.t0
    fused = [plan[3] for plan in ex.plans]
    spans = flushlog.emit(trace, st.log, ex.names, st.policy, ex.backend.name, fused, t0)
    for name, a, b in sorted(st.spans + spans, key=lambda s: s[1]):
        trace.emit(HostSpan(name, (a - t0) * 1e3, (b - t0) * 1e3))
    _trace_passes(st, trace, ex.node_name)
    trace.emit(HostSpan("total", 0.0, stats.total_ms))
    trace.emit(RunSummary(dict(stats)))
    return trace.events


def _trace_passes(st: _RunState, trace: Trace, node_name) -> None:
    """One ScheduleFormed per pass and, at trace level "nodes", its NodeRecorded events
    (that level's passes are all scheduled in Python: ``st.passes`` has each schedule)."""
    for p, ((marker, _), bound) in enumerate(zip(flushlog.passes(st.log), st.bounds)):
        nodes, launches = marker[5], marker[6]
        trace.emit(ScheduleFormed(st.policy, launches, nodes, bound, p))
    if st.node_events:
        made_by: dict[int, int] = {}  # value id -> node, across passes
        offset = batches = 0
        for dfg, sched in st.passes:
            _node_events(trace, dfg, sched, node_name, offset, batches, made_by)
            offset += dfg.num_nodes
            batches += len(sched.batches)


def _node_events(trace, dfg: DFG, sched, node_name, offset: int, batches: int, made_by) -> None:
    """One NodeRecorded per node (recording order), with its producers — in this pass or
    an earlier one — and the run-wide number of the batch that ran it; ``node_name(k,
    row)`` names the kernel that recorded a node of DFG kernel ``k``."""
    k, loc, key, _, _ = dfg.edges()
    pos_batch = {}
    for b, batch in enumerate(sched.batches):
        for n in batch.nodes.tolist():
            pos_batch[(batch.kernel, n)] = batches + b
    for pos in range(len(k)):
        kk, ll = int(k[pos]), int(loc[pos])
        row = dfg.records[kk][ll].tolist()
        info = dfg.kernels[kk]
        inputs = tuple(
            made_by[v]
            for v, batched in zip(row[ARGS:], info.arg_batched)
            if batched and v in made_by
        )
        for j in range(info.n_outputs):
            made_by[row[OUT] + j] = pos + offset
        trace.emit(
            NodeRecorded(
                pos + offset,
                node_name(kk, row),
                row[INST],
                int(key[pos] // STRIDE),
                int(key[pos] % STRIDE),
                tuple(dict.fromkeys(inputs)),
                pos_batch.get((kk, ll), -1),
            )
        )


# program -> {backend name -> Runtime}; an entry goes with its program (Runtime holds no
# reference to the program, so the cache does not keep it alive)
_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def prepare(prog, backend: str = "numpy", engine: str | None = None) -> Runtime:
    """``prog`` prepared for ``backend`` with ``engine`` ("native", "reference", or None:
    :func:`acrobat.runtime.engines.choose` decides, once): made on first use, then reused
    by every :func:`run` of the program that asks the same, and dropped with the program."""
    with borrowed():  # (two threads' first runs make one runtime)
        prepared = _PREPARED.get(prog)
        if prepared is None:
            prepared = _PREPARED[prog] = {}
        runtime = prepared.get((backend, engine))
        if runtime is None:
            runtime = prepared[(backend, engine)] = Runtime(prog, backend, engine)
        return runtime


def run(
    prog,
    instances,
    policy: str = "acrobat",
    backend: str = "numpy",
    trace_level: str = "batches",
    memory_limit: int | None = None,
    strategy: str = "auto",
    threads: int | None = None,
    engine: str | None = None,
    cancel: CancelToken | None = None,
) -> RunResult:
    """Run ``instances`` of a compiled program batched; outputs equal ``acrobat.evaluate``.

    ``policy``: "acrobat", "dynet-depth", "dynet-agenda" or "eager"; ``backend``: "numpy",
    "null" (or "cupy"/"auto"); ``trace_level``: "off", "batches" or "nodes";
    ``strategy``: "auto" (on untraced runs, measure, then run the faster of the two per
    batch-size range: :mod:`acrobat.runtime.strategy`), "batched" or "direct" (each
    instance straight through, no batching); ``res.stats.strategy`` and ``.strategy_reason`` say which ran
    and why;
    ``threads``: BLAS threads for the NumPy kernels, ``None`` (default) for the automatic
    policy of :mod:`acrobat.runtime.threads` (or ``ACROBAT_THREADS``), or a count to force;
    ``engine``: "native" or "reference" (:mod:`acrobat.runtime.engines`; None: the
    ``ACROBAT_ENGINE`` environment variable, else the native engine where its core loads),
    chosen once per program, backend and ``engine``; ``res.stats.engine`` says which ran;
    ``cancel``: an :class:`acrobat.CancelToken` whose ``set()`` (from another thread) stops
    the run before its next launch, flush or instance with :class:`acrobat.RunCancelled`.
    """
    instances = list(instances)
    runtime = prepare(prog, backend, engine)
    try:
        return runtime.run(
            instances,
            policy,
            trace_level,
            memory_limit,
            strategy=strategy,
            threads=threads,
            cancel=cancel,
        )
    except RecursionError as err:
        if str(err) == LOOP_MESSAGE:  # a runaway loop (the program calls itself forever)
            raise InstanceError(
                f"an instance does not finish: {err}",
                hint="check the condition that ends the recursion",
            ) from None
        raise InstanceError("an instance is nested too deeply for the host program") from None
