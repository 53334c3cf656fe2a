"""Pass infrastructure: passes, the context they share, the pipeline and its instruments.

A pass is a small object with a ``name`` and ``apply(module, ctx) -> module``; it never
mutates its input (IR nodes are frozen). Passes that derive new weights at compile time
(folding weight-only expressions, concatenating weights) add them to ``ctx.params``
under new names and record what they did in ``ctx.notes``; existing entries are never
changed. Instruments are called before and after every pass: one records the IR text
of each step as a :class:`~acrobat.trace.PassApplied` event for the explorer's pass-diff
view, another runs the verifier between passes in tests.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from acrobat.ir.nodes import Expr, Function, Module
from acrobat.ir.traversal import bound_vars, post_order_map
from acrobat.ir.verify import verify
from acrobat.passes.options import CompileOptions
from acrobat.trace import PassApplied, Trace

if TYPE_CHECKING:
    from acrobat.analysis.depth import DepthResult


@dataclass
class Facts:
    """What passes found out about the module, for later passes and for lowering.

    Each field has one writer; readers get the default when that pass did not run.

    phases         program phases, ``phase()`` markers kept + 1 (ValidatePhases; 1 when
                   phases are switched off); becomes ``CompiledProgram.phases``
    coarse_groups  merged kernel -> the fusion kernels it was made of, in order
                   (CoarsenGrains); a kernel not listed is one group, itself; becomes
                   ``KernelSpec.groups``
    depth          the static-depth analysis at kernel granularity of the latest
                   HoistStaticDepth run (``None`` before it, or with hoisting off)
    """

    phases: int = 1
    coarse_groups: dict[str, list[str]] = field(default_factory=dict)
    depth: DepthResult | None = None


@dataclass
class PassContext:
    """What passes share: options, weights (incl. derived ones), facts and notes."""

    options: CompileOptions
    params: dict[str, np.ndarray]
    facts: Facts = field(default_factory=Facts)
    log: list[tuple[str, str]] = field(default_factory=list)
    last_notes: list[str] = field(default_factory=list)

    def note(self, pass_name: str, text: str) -> None:
        """Record one human-readable line about what a pass did (for ``explain``)."""
        self.log.append((pass_name, text))

    @property
    def notes(self) -> dict[str, list[str]]:
        """Notes grouped by pass name (all runs of a pass together)."""
        out: dict[str, list[str]] = {}
        for name, text in self.log:
            out.setdefault(name, []).append(text)
        return out


class Pass(Protocol):
    """A module-to-module transformation."""

    name: str

    def apply(self, module: Module, ctx: PassContext) -> Module: ...


class Instrument:
    """Hooks around every pass of a :class:`Pipeline`."""

    def before(self, p: Pass, module: Module, ctx: PassContext) -> None:
        """Called before ``p`` runs."""

    def after(self, p: Pass, before: Module, after: Module, ctx: PassContext, ms: float) -> None:
        """Called after ``p`` ran, with its input and output; ``ctx.last_notes`` holds
        the notes this run of ``p`` made."""


class TraceInstrument(Instrument):
    """Records the IR text before and after each pass as a ``PassApplied`` event."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def after(self, p, before, after, ctx, ms):
        summary = "\n".join(ctx.last_notes)
        self.trace.emit(PassApplied(p.name, before.pretty(), after.pretty(), summary, ms))


class VerifyInstrument(Instrument):
    """Runs the IR verifier after every pass (used by the tests)."""

    def __init__(self, anf_after: set[str] | None = None):
        self.anf_after = anf_after or set()
        self.anf = False

    def after(self, p, before, after, ctx, ms):
        self.anf = self.anf or p.name in self.anf_after
        verify(after, anf=self.anf)


@dataclass
class Pipeline:
    """An ordered list of passes run with instruments."""

    passes: list[Pass]
    instruments: list[Instrument] = field(default_factory=list)

    def run(self, module: Module, ctx: PassContext) -> Module:
        for p in self.passes:
            for ins in self.instruments:
                ins.before(p, module, ctx)
            mark = len(ctx.log)
            t0 = time.perf_counter()
            out = p.apply(module, ctx)
            ms = (time.perf_counter() - t0) * 1e3
            ctx.last_notes = [text for _, text in ctx.log[mark:]]
            for ins in self.instruments:
                ins.after(p, module, out, ctx, ms)
            module = out
        return module


class NameSupply:
    """Fresh variable names for one function (names are unique per function)."""

    def __init__(self, fn: Function):
        self.used = {p.name for p in fn.params} | {v.name for v in bound_vars(fn.body)}

    def fresh(self, base: str) -> str:
        base = base.rstrip("0123456789_") or "t"
        k = 0
        while True:
            k += 1
            name = f"{base}_{k}"
            if name not in self.used:
                self.used.add(name)
                return name


def fresh_global(base: str, taken: set[str], start: int = 0) -> str:
    """``<base><k>`` for the smallest ``k >= start`` not in ``taken`` (which then holds it).

    New functions and kernels are named after the function they came from; checking
    every name in the module keeps them from clashing with a user function such as
    ``main_k0`` or ``cell_dup1``.
    """
    k = start
    while f"{base}{k}" in taken:
        k += 1
    taken.add(f"{base}{k}")
    return f"{base}{k}"


def map_functions(module: Module, fn) -> Module:
    """``module`` with ``fn`` applied to every function (in order)."""
    return dataclasses.replace(module, functions=tuple(fn(f) for f in module.functions))


NodeRule = Callable[[Expr], Expr]


def map_host_functions(
    module: Module, rule: Callable[[Function, NameSupply, Module], NodeRule]
) -> tuple[Function, ...]:
    """The module's functions with every host function rewritten bottom-up, node by node.

    Kernels are kept as they are. For each host function ``f``, in module order,
    ``rule(f, names, current)`` returns the node rewrite that :func:`post_order_map`
    applies to ``f.body`` (children before parents, so a rule sees rewritten blocks);
    ``names`` is a fresh :class:`NameSupply` for ``f`` and ``current`` the module with
    the functions before ``f`` already rewritten (those after it as they were). The
    result is in the module's order; callers add or drop functions (new kernels, unused
    ones) themselves.
    """
    fns = list(module.functions)
    for i, f in enumerate(fns):
        if f.is_kernel:
            continue
        names = NameSupply(f)
        current = dataclasses.replace(module, functions=tuple(fns))
        fns[i] = dataclasses.replace(f, body=post_order_map(f.body, rule(f, names, current)))
    return tuple(fns)
