"""The direct strategy: run each instance straight through, kernels called at once.

:class:`DirectRunner` runs the compiler's direct program
(:mod:`acrobat.codegen.direct`): a loop over the instances, each running its control flow
with tensors in hand as arrays of their own shapes and every kernel's per-instance
flavour called for that one instance. No records, DFG, schedule or arenas: what a per-instance loop written by hand
costs, with the compiler's fused kernels. It wins where batching cannot pay (few small
instances); :mod:`acrobat.runtime.strategy` decides when.

Outputs equal the batched path's, and so do the errors: an out-of-range embedding id
names the kernel and the instance, a host value that does not fit in 64 bits and a
failure of host arithmetic are the instance's :class:`~acrobat.errors.InstanceError`.
With several bad instances the first one in instance order is named (the batched path
names the first host-code failure before any kernel's).
"""

from __future__ import annotations

import gc
import sys
import time

import numpy as np

from acrobat.codegen.direct import generate_direct
from acrobat.codegen.numpy_kernels import compile_numpy_kernel
from acrobat.errors import AcrobatNameError, IndexOutOfRange, InstanceError
from acrobat.ir.nodes import Module
from acrobat.ir.types import AdtType, TensorType, TupleType, Type, substitute
from acrobat.ir.values import AdtValue, entry_args, from_list, to_list
from acrobat.runtime.fibers import HOST_FAILURES, host_failure
from acrobat.runtime.values import has_tensor
from acrobat.trace import HostProgramGenerated, HostSpan, KernelCompiled, Trace

DIRECT_BACKENDS = ("numpy", "null")  # backends whose kernels the direct strategy can call
_PROGRAM_FILE = "<direct program>"


def _one(kept: set):
    """Input tensors as the direct program holds them: the user's arrays (checked by
    ``entry_args``; the program never writes into them) as plain ndarrays, each one's
    id put in ``kept`` (a result must not be one of them)."""

    def leaf(t: TensorType):
        def one(x):
            if type(x) is not np.ndarray:
                x = np.asarray(x)
            kept.add(id(x))
            return x

        return one

    return leaf


def _result(kept: set):
    """Result tensors for the user: arrays of their own, of the declared dtype (as the
    batched path's arenas give them). An array a kernel made in this run (a base array:
    not a view of a weight, of an input or of another array) is handed over as it is,
    once; anything else (an id in ``kept``: a weight, an input, one handed over already)
    is copied."""

    def leaf(t: TensorType):
        dtype = np.dtype(t.dtype)

        def result(x):
            if type(x) is np.ndarray and x.base is None and x.dtype == dtype:
                i = id(x)
                if i not in kept:
                    kept.add(i)
                    return x
            return np.array(x, dtype)

        return result

    return leaf


def converter(m: Module, ty: Type, leaf, memo: dict | None = None):
    """``conv(value)``: a value of type ``ty`` with every tensor ``x`` of type ``t``
    replaced by ``leaf(t)(x)``, or None when values of ``ty`` hold no tensor (they pass as
    they are), planned once per type instead of walked generically per value: per constructor, which fields are the recursive spine
    (walked with an explicit stack, so any depth works) and which hold tensors. A node
    none of whose fields changed is kept (parts without tensors are shared)."""
    memo = {} if memo is None else memo
    if not has_tensor(m, ty):
        return None
    if isinstance(ty, TensorType):
        return leaf(ty)
    if ty in memo:  # a type inside its own fields' types (mutual recursion): late-bound
        return memo[ty]
    if isinstance(ty, TupleType):
        subs = [converter(m, f, leaf, memo) for f in ty.fields]

        def conv_tuple(v):
            return tuple(x if c is None else c(x) for x, c in zip(v, subs))

        return conv_tuple
    assert isinstance(ty, AdtType), ty
    plans: dict[str, tuple[tuple[int, ...], tuple]] = {}
    memo[ty] = lambda v: conv_adt(v)
    adt = m.adt_map[ty.name]
    mapping = dict(zip(adt.type_params, ty.args))
    for c in adt.ctors:
        fts = [substitute(f, mapping) for f in c.fields]
        rec = tuple(i for i, ft in enumerate(fts) if ft == ty)
        subs = [(i, converter(m, ft, leaf, memo)) for i, ft in enumerate(fts) if ft != ty]
        plans[c.name] = (rec, tuple((i, s) for i, s in subs if s is not None))

    def conv_adt(v):
        order, stack = [], [v]
        push, pop, visit = stack.append, stack.pop, order.append
        while stack:
            node = pop()
            visit(node)
            for i in plans[node.ctor][0]:
                push(node.fields[i])
        done = {}
        for node in reversed(order):
            rec, subs = plans[node.ctor]
            if not (rec or subs):
                done[id(node)] = node
                continue
            fields, changed = list(node.fields), False
            for i in rec:
                x = fields[i]
                y = done[id(x)]
                if y is not x:
                    fields[i], changed = y, True
            for i, sub in subs:
                x = fields[i]
                y = sub(x)
                if y is not x:
                    fields[i], changed = y, True
            done[id(node)] = AdtValue(node.ctor, fields) if changed else node
        return done[id(v)]

    if any(len(rec) > 1 for rec, _ in plans.values()):
        memo[ty] = conv_adt
        return conv_adt
    # at most one recursive field per constructor (a list): a chain, no stack, no dict
    steps = {name: (rec[0] if rec else -1, subs) for name, (rec, subs) in plans.items()}

    def conv_chain(v):
        chain, node = [], v
        while True:
            chain.append(node)
            i = steps[node.ctor][0]
            if i < 0:
                break
            node = node.fields[i]
        new = None
        for node in reversed(chain):
            i, subs = steps[node.ctor]
            if i < 0 and not subs:
                new = node
                continue
            fields = list(node.fields)
            changed = i >= 0 and new is not fields[i]
            if changed:
                fields[i] = new
            for j, sub in subs:
                x = fields[j]
                y = sub(x)
                if y is not x:
                    fields[j], changed = y, True
            new = AdtValue(node.ctor, fields) if changed else node
        return new

    memo[ty] = conv_chain
    return conv_chain


def _null_kernel(kernel):
    """The null backend's kernel for one instance: zeros of its output shapes."""
    ret = kernel.function.ret
    if not isinstance(ret, TupleType):
        shape = tuple(ret.shape)
        return lambda *args: np.zeros(shape, np.float32)
    shapes = [tuple(t.shape) for t in ret.fields]
    return lambda *args: tuple(np.zeros(s, np.float32) for s in shapes)


class DirectRunner:
    """A runtime's direct program, made ready: its kernels compiled per instance (no
    batch axis), the generated program compiled once."""

    def __init__(self, runtime):
        backend = runtime.backend.name
        if backend not in DIRECT_BACKENDS:
            raise AcrobatNameError(
                f"strategy 'direct' runs kernels on the host; backend {backend!r} runs batched",
                hint=f"use strategy='batched', or a backend of {DIRECT_BACKENDS}",
            )
        m = self.module = runtime.module
        prog = runtime.direct_program or generate_direct(m)
        self.program = prog
        specs = {k.name: k for k in runtime.kernels}
        self.fns, self.sources = [], {}
        for name in prog.kernels:
            if backend == "numpy":
                k = compile_numpy_kernel(specs[name].function, runtime.params, per_instance=True)
                fn, src = k.fn, k.source
            else:  # the null backend: zeros of the kernel's shapes
                fn = _null_kernel(specs[name])
                src = runtime.backend.compile(specs[name], runtime.params)[1]
            self.fns.append(fn)
            self.sources[name] = src
        ns: dict = {}
        exec(compile(prog.source, _PROGRAM_FILE, "exec"), ns)  # generated by us
        self.make = ns["make"]
        self.weights = {w: runtime.params[w] for w in prog.weight_values}
        # ids of the arrays a result must not be (weights, this run's inputs, results
        # handed over already): refilled per run, read by the converters' leaves
        self.kept: set[int] = set()
        self.weight_ids = frozenset(id(a) for a in runtime.params.values())
        self.inputs = [converter(m, p.ty, _one(self.kept)) for p in m.main.params]
        self.output = converter(m, m.main.ret, _result(self.kept))

    def run(self, instances: list, stats, trace_level: str) -> tuple[list, Trace]:
        """Every instance's result; fills ``stats`` (a ``RunStats``). The caller completes
        the statistics (BLAS threads) and, when tracing, emits the ``RunSummary``."""
        trace = Trace()
        traced = trace_level != "off"
        if traced:
            trace.emit(HostProgramGenerated(self.program.source))
            for name, src in self.sources.items():
                trace.emit(KernelCompiled(name, stats.backend, src))
        t0 = time.perf_counter()
        # the program allocates many small objects and frees them by reference counting:
        # the cycle collector's passes over them are pure overhead, so it waits (as in a
        # batched run)
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run(instances, stats, trace, traced, t0)
        finally:
            self.kept.clear()
            if collecting:
                gc.enable()

    def _run(
        self, instances: list, stats, trace: Trace, traced: bool, t0: float
    ) -> tuple[list, Trace]:
        m = self.module
        checked = [entry_args(m, x, i) for i, x in enumerate(instances)]
        entry, calls = self.make(*self.fns, np, AdtValue, to_list, from_list, self.weights)
        self.kept.clear()
        self.kept.update(self.weight_ids)
        t1 = time.perf_counter()
        raw = []
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, 200_000))
        try:
            convs = self.inputs
            for i, args in enumerate(checked):
                conv = [a if c is None else c(a) for a, c in zip(args, convs)]
                try:
                    raw.append(entry(*conv))
                except IndexOutOfRange as err:
                    raise InstanceError(
                        f"{_kernel_of(err)}: embedding {err}",
                        i,
                        hint="token ids must lie in [0, vocabulary size)",
                    ) from None
                except HOST_FAILURES as err:
                    typed = self._host_error(err, i)
                    if typed is err:
                        raise
                    raise typed from None
        finally:
            sys.setrecursionlimit(old_limit)
        t2 = time.perf_counter()
        output = self.output
        outputs = raw if output is None else [output(r) for r in raw]
        n = calls()
        stats.exe_ms = (t2 - t1) * 1e3
        stats.total_ms = (time.perf_counter() - t0) * 1e3
        stats.launches = stats.nodes = n
        stats.mean_batch = 1.0 if n else 0.0
        stats.instances = len(instances)
        if traced:
            trace.emit(HostSpan("direct", (t1 - t0) * 1e3, (t2 - t0) * 1e3))
            trace.emit(HostSpan("total", 0.0, stats.total_ms))
        return outputs, trace

    def _host_error(self, err: Exception, inst: int) -> Exception:
        """The instance's typed error for a failure raised by the program's own code (a
        failure inside a kernel is not host arithmetic: it is re-raised as it is)."""
        tb = err.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        if tb.tb_frame.f_code.co_filename != _PROGRAM_FILE:
            return err
        if isinstance(err, OverflowError) and tb.tb_lineno in self.program.int_lines:
            return InstanceError(
                "a host value passed to a kernel does not fit in 64 bits",
                inst,
                hint="token ids and other host ints passed to tensor ops must lie "
                "in the int64 range",
            )
        return host_failure(err, inst)


def _kernel_of(err: IndexOutOfRange) -> str:
    """The kernel that raised ``err`` (its code is compiled as ``<kernel NAME>``)."""
    name = "kernel"
    tb = err.__traceback__
    while tb is not None:
        file = tb.tb_frame.f_code.co_filename
        if file.startswith("<kernel ") and file.endswith(">"):
            name = file[len("<kernel ") : -1]
        tb = tb.tb_next
    return name


__all__ = ["DIRECT_BACKENDS", "DirectRunner"]
