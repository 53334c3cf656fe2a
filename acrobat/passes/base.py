"""Pass infrastructure: passes, the context they share, the pipeline and its instruments.

A pass is a small object with a ``name`` and ``apply(module, ctx) -> module``; it never
mutates its input (IR nodes are frozen). It declares the module :class:`Property` set it
``requires``, ``provides`` and ``invalidates`` as class attributes, and
:class:`Pipeline` checks them before running anything. Passes that derive new weights
at compile time (folding weight-only expressions, concatenating weights, embedding tables)
add them to ``ctx.params`` under new names (:meth:`PassContext.derive`) and record what they did in ``ctx.notes``; existing
entries are never changed. What a pass finds out for later passes and for lowering goes
into the typed ``ctx.facts`` (:class:`Facts`). Most passes rewrite each host function's
blocks bottom-up: :func:`map_host_functions` is that loop. Instruments are called
before and after every pass: one records the IR text of each step as a
:class:`~acrobat.trace.PassApplied` event for the explorer's pass-diff view, another
runs the verifier between passes in tests.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

import numpy as np

from acrobat.errors import PipelineError
from acrobat.ir.nodes import Expr, Function, Let, Module, ParamDef
from acrobat.ir.traversal import bound_vars, post_order_map, var_names
from acrobat.ir.types import TensorType
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
    independent    host function -> pairs of its steps (bound variables) that no data
                   dependency orders, so they start at one depth (InferIndependence;
                   empty with independence off)
    """

    phases: int = 1
    coarse_groups: dict[str, list[str]] = field(default_factory=dict)
    depth: DepthResult | None = None
    independent: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@dataclass
class PassContext:
    """What passes share: options, weights (incl. derived ones), facts and notes."""

    options: CompileOptions
    params: dict[str, np.ndarray]
    facts: Facts = field(default_factory=Facts)
    log: list[tuple[str, str]] = field(default_factory=list)
    last_notes: list[str] = field(default_factory=list)

    def derive(self, base: str, value: np.ndarray) -> ParamDef:
        """Store ``value`` as a new weight ``<base><k>`` (the first ``k`` not taken; existing
        entries are never changed) and return its declaration for the module."""
        k = 0
        while f"{base}{k}" in self.params:
            k += 1
        name = f"{base}{k}"
        self.params[name] = value
        return ParamDef(name, TensorType(value.shape, str(value.dtype)))

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


class Property(StrEnum):
    """Properties of a module that passes need and establish (see :meth:`Pipeline.check`).

    Every module is typed and binds each variable once per function (the verifier checks
    both after every pass), so those are not listed. A pass that an option switches off
    returns its input unchanged and still counts as having run: the step is done, as
    the identity.
    """

    TOP_LEVEL_PHASES = "top-level-phases"
    """``phase()`` appears only in the entry's top-level block (ValidatePhases)."""
    ANF = "anf"
    """Every operand is an atom and every intermediate value is named by a ``let``;
    branch bodies are blocks; ``verify(m, anf=True)`` holds (ToANF)."""
    SPECIALIZED = "specialized"
    """Weights reach each function as ``$W``, one clone per weight context, wherever the
    taint analysis allows (SpecializeWeights)."""
    KERNELS = "kernels"
    """Every tensor op except host reads is inside a kernel (FuseOps)."""
    HOISTED = "hoisted"
    """Every kernel call site's static depth is up to date: the call sites that do not
    depend on recursion carry their depth, the others none (HoistStaticDepth)."""


class Pass(Protocol):
    """A module-to-module transformation.

    Besides ``name`` and ``apply``, a pass declares what it needs as data, as class
    attributes (an absent one means the empty set):

    requires     properties that must hold when it runs
    provides     properties that hold after it
    invalidates  properties that may no longer hold after it (other properties are kept)

    :class:`Pipeline` checks the declarations before it runs anything.
    """

    name: str
    requires: frozenset[Property]
    provides: frozenset[Property]
    invalidates: frozenset[Property]

    def apply(self, module: Module, ctx: PassContext) -> Module: ...


def declared(p: Pass, what: str) -> frozenset[Property]:
    """``p.requires``, ``p.provides`` or ``p.invalidates`` (empty when not declared)."""
    return frozenset(getattr(p, what, ()))


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
        self.last: tuple[Module, str] | None = None  # the last module printed, and its text

    def _text(self, module: Module) -> str:
        """``module.pretty()``, printed once: a pass's input is the previous pass's output,
        and a pass that changes nothing returns its input (printing was a sixth of a
        compile)."""
        if self.last is None or self.last[0] is not module:
            self.last = (module, module.pretty())
        return self.last[1]

    def after(self, p, before, after, ctx, ms):
        summary = "\n".join(ctx.last_notes)
        self.trace.emit(PassApplied(p.name, self._text(before), self._text(after), summary, ms))


class VerifyInstrument(Instrument):
    """Runs the IR verifier after every pass (used by the tests).

    The ANF rules are checked from the first pass that provides ``anf`` on, or, when
    ``anf_after`` is given, from the first pass named in it on.
    """

    def __init__(self, anf_after: set[str] | None = None):
        self.anf_after = anf_after
        self.anf = False

    def after(self, p, before, after, ctx, ms):
        if self.anf_after is None:
            starts = Property.ANF in declared(p, "provides")
        else:
            starts = p.name in self.anf_after
        self.anf = self.anf or starts
        verify(after, anf=self.anf)


@dataclass
class Pipeline:
    """An ordered list of passes run with instruments.

    ``given`` are the properties the input module already has (none for a module fresh
    from the frontend). Before running anything, :meth:`run` checks with :meth:`check`
    that every pass's ``requires`` hold at its position.
    """

    passes: list[Pass]
    instruments: list[Instrument] = field(default_factory=list)
    given: frozenset[Property] = frozenset()

    def check(self) -> None:
        """Raise :class:`PipelineError` at the first pass whose requirements do not hold.

        Walks the passes in order from ``given``: before each pass its ``requires`` must
        be held; after it, its ``invalidates`` are dropped and its ``provides`` added.
        """
        held = set(self.given)
        by: dict[Property, int] = {}  # the step that last provided or invalidated each one
        for i, p in enumerate(self.passes):
            missing = sorted(declared(p, "requires") - held)
            if missing:
                raise self._missing(i, missing[0], by.get(missing[0]))
            for prop in declared(p, "invalidates"):
                held.discard(prop)
                by[prop] = i
            for prop in declared(p, "provides"):
                held.add(prop)
                by[prop] = i

    def _missing(self, i: int, prop: Property, last: int | None) -> PipelineError:
        p = self.passes[i]
        step = f"{p.name} (step {i + 1})"
        later = [
            (j, q) for j, q in enumerate(self.passes) if j > i and prop in declared(q, "provides")
        ]
        if last is not None:  # provided, then invalidated
            culprit = self.passes[last]
            return PipelineError(
                f"{step} requires {prop.value!r}, which {culprit.name} (step {last + 1}) "
                "invalidates",
                hint=f"run a pass that provides {prop.value!r} between {culprit.name} and {p.name}",
            )
        if later:
            j, q = later[0]
            return PipelineError(
                f"{step} requires {prop.value!r}, which {q.name} provides only later "
                f"(step {j + 1})",
                hint=f"run {q.name} before {p.name}",
            )
        return PipelineError(
            f"{step} requires {prop.value!r}, which no pass before it provides",
            hint=f"add a pass that provides {prop.value!r} before {p.name}, or list it in "
            "Pipeline(given=...) when the input module already has it",
        )

    def run(self, module: Module, ctx: PassContext) -> Module:
        self.check()
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


def last_uses(e: Let) -> dict[str, int]:
    """The last position of ``e`` that uses each name: binding ``i``'s value, or
    ``len(e.bindings)`` for the body. A name is used at a position ``>= i`` iff its last
    use is: one dict for a block instead of a set of names per position (quadratic)."""
    last = dict.fromkeys(var_names(e.body), len(e.bindings))
    for i in range(len(e.bindings) - 1, -1, -1):
        for name in var_names(e.bindings[i].value):
            last.setdefault(name, i)
    return last


class NameSupply:
    """Fresh variable names for one function (names are unique per function)."""

    def __init__(self, fn: Function):
        self.used = {p.name for p in fn.params} | {v.name for v in bound_vars(fn.body)}
        self.last: dict[str, int] = {}  # base -> the suffix it was last given

    def fresh(self, base: str) -> str:
        """``base_k`` with the least ``k >= 1`` not used yet. Names are never freed, so the
        search resumes at the last suffix given for ``base`` (linear, not quadratic, in the
        names one pass makes)."""
        base = base.rstrip("0123456789_") or "t"
        k = self.last.get(base, 0)
        while True:
            k += 1
            name = f"{base}_{k}"
            if name not in self.used:
                self.used.add(name)
                self.last[base] = k
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
