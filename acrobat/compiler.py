"""``acrobat.compile`` and ``acrobat.explain``: the compile-time half of ACRoBat.

The pipeline (each step one pass file in :mod:`acrobat.passes`)::

    ValidatePhases -> ToANF -> InlineSmallFunctions -> EliminateDeadCode -> ReadsLast
    -> SpecializeWeights -> FoldWeightExpressions -> BatchHorizontally -> EliminateDeadCode
    -> FuseOps -> HoistStaticDepth -> CoarsenGrains -> HoistStaticDepth
    -> InferIndependence -> AddGhostOps -> EliminateDeadCode

and lowering to a :class:`CompiledProgram`, which holds everything that does not
depend on the inputs: the generated host program (the module's ordinary functions as
Python source whose kernel calls record DFG nodes at run time,
:mod:`acrobat.codegen.host`) and one :class:`KernelSpec` per kernel, with its CUDA plan
made on first use. What depends on a backend (compiled kernel callables, arenas) lives
in the runtime's prepared :class:`~acrobat.runtime.run.Runtime`, never in the program.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from acrobat.analysis.taint import TaintResult, taint, taint_classes
from acrobat.codegen.cuda_kernels import CudaPlan, plan_kernel
from acrobat.codegen.direct import DirectProgram, generate_direct
from acrobat.codegen.host import HostProgram, generate_host
from acrobat.codegen.host_c import generate_host_c
from acrobat.ir import ops
from acrobat.ir.nodes import Binding, Function, KernelCall, Let, Module, OpCall, ParamRef
from acrobat.ir.traversal import walk
from acrobat.ir.types import ScalarType, TupleType, Type
from acrobat.ir.values import check_params
from acrobat.passes.anf import ToANF
from acrobat.passes.base import Instrument, PassContext, Pipeline, TraceInstrument
from acrobat.passes.coarsen import CoarsenGrains
from acrobat.passes.dce import EliminateDeadCode
from acrobat.passes.fold_weights import FoldWeightExpressions
from acrobat.passes.fuse import FuseOps
from acrobat.passes.ghost import AddGhostOps
from acrobat.passes.hoist import HoistStaticDepth
from acrobat.passes.horizontal import BatchHorizontally
from acrobat.passes.independence import InferIndependence
from acrobat.passes.inline import InlineSmallFunctions
from acrobat.passes.options import OPTIMIZATIONS, CompileOptions
from acrobat.passes.phases import ValidatePhases
from acrobat.passes.reads import ReadsLast
from acrobat.passes.specialize import SpecializeWeights
from acrobat.passes.tabulate import TabulateEmbeddings
from acrobat.reprs import html_summary, text_summary
from acrobat.trace import KernelMapped, PassApplied, StageTaint, TaintComputed, Trace

BATCHED, HOST = "batched", "host"


@dataclass(frozen=True)
class KernelSpec:
    """One kernel: what a backend compiles into a batched callable.

    ``params`` are the per-instance arguments with their mode: ``batched`` (a tensor,
    gathered by index per batch) or ``host`` (a host scalar such as an embedding id, one
    per instance). Weights are not arguments: ``weights`` names the parameters the body
    reads, which are passed once and reused across the batch. ``groups`` are the fusion
    groups the kernel was made of (one fused GPU kernel each).
    """

    name: str
    params: tuple[tuple[str, Type, str], ...]
    outputs: tuple[Type, ...]
    weights: tuple[str, ...]
    function: Function
    groups: tuple[str, ...]
    flops: int

    @property
    def ops(self) -> tuple[Binding, ...]:
        body = self.function.body
        return body.bindings if isinstance(body, Let) else ()

    @functools.cached_property
    def cuda_plan(self) -> CudaPlan:
        """The kernel's CUDA plan (launches and products), made once on first use: it
        depends only on the kernel, and ops without a CUDA rule fail only there."""
        return plan_kernel(self.function)


@dataclass(eq=False)
class CompiledProgram:
    """The compiler's output: host program, kernels, weights and what the passes did.

    Complete when ``compile`` returns and never written by a run: ``host_program`` is
    the generated host program (``.source``, ``.kernels``, ``.fibers``,
    ``.weight_values``), ``kernels`` the kernel specs. Compare programs by identity."""

    module: Module
    kernels: dict[str, KernelSpec]
    params: dict[str, np.ndarray]
    options: CompileOptions
    source_module: Module
    trace: Trace
    notes: dict[str, list[str]]
    taint: TaintResult
    max_static_depth: int
    phases: int
    host_program: HostProgram = field(repr=False)
    stats: dict[str, Any] = field(default_factory=dict)
    # the direct strategy's program (kernels called at once, per instance: codegen.direct)
    direct_program: DirectProgram | None = field(default=None, repr=False)
    # host function -> pairs of independent steps (InferIndependence, for explain)
    independent: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # kernel name -> where it comes from (source lines, callers, ops, signature)
    kernel_map: dict[str, KernelMapped] = field(default_factory=dict)

    @property
    def host_functions(self) -> list[Function]:
        return [f for f in self.module.functions if not f.is_kernel]

    def _summary(self) -> list[tuple[str, object]]:
        megabytes = sum(p.nbytes for p in self.params.values()) / 1e6
        off = [n for n in OPTIMIZATIONS if not getattr(self.options, n)]
        return [
            ("entry", self.module.entry),
            ("kernels", len(self.kernels)),
            ("host functions", len(self.host_functions)),
            ("phases", self.phases),
            ("max static depth", self.max_static_depth),
            ("weights", f"{len(self.params)} ({megabytes:.2f} MB)"),
            ("disabled", ", ".join(off) or "none"),
        ]

    def __repr__(self) -> str:
        return text_summary("CompiledProgram", self._summary())

    def _repr_html_(self) -> str:
        return html_summary("CompiledProgram", self._summary())


def default_passes() -> list:
    """The pipeline in order (a fresh list of pass objects)."""
    return [
        ValidatePhases(),
        ToANF(),
        InlineSmallFunctions(),
        EliminateDeadCode(),
        ReadsLast(),
        SpecializeWeights(),
        FoldWeightExpressions(),
        TabulateEmbeddings(),
        BatchHorizontally(),
        EliminateDeadCode(),
        FuseOps(),
        HoistStaticDepth(),
        CoarsenGrains(),
        HoistStaticDepth(),
        InferIndependence(),
        AddGhostOps(),
        EliminateDeadCode(),
    ]


class _CountSites(Instrument):
    """Kernels and DFG-node call sites before and after coarsening (for ``explain``)."""

    def __init__(self, stats: dict):
        self.stats = stats

    def after(self, p, before, after, ctx, ms):
        if p.name in ("FuseOps", "CoarsenGrains"):
            key = "before_coarsening" if p.name == "FuseOps" else "after_coarsening"
            self.stats[key] = count_sites(after)


class _StageTaint(Instrument):
    """The taint classes of every host function at the pipeline's earlier stages, as
    ``StageTaint`` events: stage 0 (the parsed program) and the stage each pass of
    :data:`TAINT_BEFORE` starts from (before fusion: every op still in a host function). The
    last stage is ``TaintComputed``'s. The explorer's taint view offers these; every stage
    would cost about half a compile more (measured on Berxit), these two a few per cent."""

    def __init__(self, trace: Trace):
        self.trace, self.done = trace, 0

    def before(self, p, module, ctx):
        if self.done == 0 or p.name in TAINT_BEFORE:
            classes = taint_classes(module)
            for f in module.functions:
                if not f.is_kernel:
                    event = StageTaint(self.done, f.name, dict(classes.get(f.name, {})))
                    self.trace.emit(event)

    def after(self, p, before, after, ctx, ms):
        self.done += 1


TAINT_BEFORE = ("FuseOps",)
"""Passes whose input stage the compile trace records taint classes of (``StageTaint``)."""


def count_sites(m: Module) -> dict[str, int]:
    """Distinct kernels and kernel call sites (DFG-node sites) in a module."""
    sites = sum(1 for f in m.functions for e in walk(f.body) if isinstance(e, KernelCall))
    return {"kernels": sum(1 for f in m.functions if f.is_kernel), "call_sites": sites}


def compile(  # noqa: A001 - the public facade's name
    module: Module,
    params: dict[str, np.ndarray],
    options: CompileOptions | None = None,
    trace: Trace | None = None,
    instruments: list[Instrument] | None = None,
) -> CompiledProgram:
    """Run ACRoBat's passes and lower ``module`` to a :class:`CompiledProgram`."""
    options = options or CompileOptions()
    check_params(module, params)
    trace = trace if trace is not None else Trace()
    ctx = PassContext(options, dict(params))
    stats: dict[str, Any] = {"source": count_sites(module)}
    ins = [TraceInstrument(trace), _StageTaint(trace), _CountSites(stats), *(instruments or [])]
    out = Pipeline(default_passes(), ins).run(module, ctx)
    if "after_coarsening" not in stats:
        stats["after_coarsening"] = count_sites(out)
    kernels = {
        f.name: kernel_spec(f, ctx.facts.coarse_groups) for f in out.functions if f.is_kernel
    }
    result_taint = taint(out)
    for f in out.functions:
        if not f.is_kernel:
            trace.emit(
                TaintComputed(
                    f.name,
                    dict(result_taint.classes.get(f.name, {})),
                    f.name in result_taint.fiber_functions,
                    tuple(v for fn, v in result_taint.tensor_dependent_branches if fn == f.name),
                )
            )
    depths = [
        e.depth
        for f in out.functions
        for e in walk(f.body)
        if isinstance(e, KernelCall) and e.depth is not None
    ]
    max_static_depth = max(depths, default=-1)
    # dynamic depths start right after the hoisted (static) ones
    host = generate_host(
        out, result_taint.fiber_functions, max_static_depth + 1, options.independence
    )
    # the same host program as C, built on the first run (None: it stays Python)
    c_source = generate_host_c(
        out,
        result_taint.fiber_functions,
        max_static_depth + 1,
        options.independence,
        host.weight_values,
    )
    host = dataclasses.replace(host, c_source=c_source)
    return CompiledProgram(
        module=out,
        kernels=kernels,
        params=ctx.params,
        options=options,
        source_module=module,
        trace=trace,
        notes=ctx.notes,
        taint=result_taint,
        max_static_depth=max_static_depth,
        phases=ctx.facts.phases,
        host_program=host,
        stats=stats,
        direct_program=generate_direct(out),
        independent=ctx.facts.independent,
        kernel_map=kernel_map(kernels, [f for f in out.functions if not f.is_kernel]),
    )


def kernel_map(kernels: dict[str, KernelSpec], host_functions) -> dict[str, KernelMapped]:
    """Kernel name -> :class:`~acrobat.trace.KernelMapped`: the source lines of its ops (the
    spans the frontend gave them, kept through the passes) and of its call sites, the host
    functions calling it, its op names and its signature."""
    lines: dict[str, set[int]] = {name: set() for name in kernels}
    callers: dict[str, set[str]] = {name: set() for name in kernels}
    files: dict[str, str] = {}
    for name, spec in kernels.items():
        for b in spec.ops:
            for e in walk(b.value):
                span = getattr(e, "span", None)
                if span is not None and span.line:
                    lines[name].add(span.line)
                    files.setdefault(name, span.file or "")
    for f in host_functions:
        for e in walk(f.body):
            if isinstance(e, KernelCall) and e.kernel in lines:
                callers[e.kernel].add(f.name)
                if e.span is not None and e.span.line:
                    lines[e.kernel].add(e.span.line)
                    files.setdefault(e.kernel, e.span.file or "")
    return {
        name: KernelMapped(
            name,
            files.get(name, ""),
            tuple(sorted(lines[name])),
            tuple(sorted(callers[name])),
            tuple(b.value.op for b in spec.ops if isinstance(b.value, OpCall)),
            tuple(f"{p}: {ty} ({mode})" for p, ty, mode in spec.params),
            tuple(str(ty) for ty in spec.outputs),
        )
        for name, spec in kernels.items()
    }


def kernel_spec(f: Function, coarse_groups: dict[str, list[str]]) -> KernelSpec:
    """The spec of one kernel function."""
    params = tuple(
        (p.name, p.ty, HOST if isinstance(p.ty, ScalarType) else BATCHED) for p in f.params
    )
    outputs = f.ret.fields if isinstance(f.ret, TupleType) else (f.ret,)
    weights = tuple(dict.fromkeys(e.name for e in walk(f.body) if isinstance(e, ParamRef)))
    flops = sum(op_flops(e) for e in walk(f.body) if isinstance(e, OpCall))
    return KernelSpec(
        f.name, params, outputs, weights, f, tuple(coarse_groups.get(f.name, [f.name])), flops
    )


def op_flops(e: OpCall) -> int:
    """Floating-point operations of one op for one instance (multiply-add = 2), by the
    op's FLOP rule in the registry."""
    return ops.op_flops(e.op, [a.ty for a in e.args], e.ty, dict(e.attrs))


def explain(
    module: Module, params: dict[str, np.ndarray], options: CompileOptions | None = None
) -> str:
    """A readable report of what each pass did, and the kernel/DFG-node table."""
    prog = compile(module, params, options)
    lines = ["acrobat.explain", "=" * 15, ""]
    for ev in prog.trace.of(PassApplied):
        lines.append(f"{ev.name} ({ev.ms:.1f} ms)")
        for n in ev.summary.splitlines():
            lines.append(f"  - {n}")
    s = prog.stats
    lines += [
        "",
        "kernels and DFG-node call sites",
        f"  {'':<22}{'kernels':>9}{'call sites':>12}",
        f"  {'after fusion':<22}{s['before_coarsening']['kernels']:>9}"
        f"{s['before_coarsening']['call_sites']:>12}",
        f"  {'after coarsening':<22}{s['after_coarsening']['kernels']:>9}"
        f"{s['after_coarsening']['call_sites']:>12}",
        "",
        f"static depths: 0..{prog.max_static_depth} hoisted; dynamic code starts at "
        f"{prog.max_static_depth + 1}; {prog.phases} phase(s)",
        "fibers (tensor-dependent control flow): "
        + (", ".join(sorted(prog.taint.fiber_functions)) or "none"),
        "independence: "
        + (
            "steps start when their operands are ready (reads, fiber calls, phases and "
            "ghosts keep program order); "
            f"{sum(map(len, prog.independent.values()))} independent pair(s) in "
            f"{len(prog.independent)} function(s)"
            if prog.options.independence
            else "off (depth follows program order)"
        ),
        "leveling: "
        + (
            "on (the acrobat policy list-schedules each pass critical path first, merging "
            "equal work the depth keys put at different depths; never more launches than "
            "the key buckets)"
            if prog.options.leveling
            else "off (one launch per depth key and kernel)"
        ),
    ]
    for k in prog.kernels.values():
        lines.append(
            f"  kernel {k.name}: {len(k.ops)} op(s), {len(k.params)} batched arg(s), "
            f"weights {', '.join(k.weights) or '-'}, {k.flops} flop/instance"
        )
    return "\n".join(lines) + "\n"


__all__ = ["CompiledProgram", "KernelSpec", "compile", "explain"]
