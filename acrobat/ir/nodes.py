"""IR nodes: a small, functional, Relay-like expression language.

Every node is a frozen dataclass compared structurally; ``ty`` is filled in by type
inference (:mod:`acrobat.ir.typecheck`) and ``span`` points back to the source (it is
ignored by equality, so a program read back from its printed form equals the original).

Expressions::

    Var  Const  ParamRef  GlobalRef                 atoms
    OpCall(op, args, attrs)                         a registered tensor or host op
    FnCall(fn, args)  CtorCall(ctor, args)          global function / ADT constructor
    KernelCall(kernel, args, depth)                 a kernel: one DFG node at run time
    TupleExpr(fields)  Proj(tup, index)
    Let(bindings, body)                             a block of sequential bindings
    If(cond, then, orelse)  Match(scrutinee, clauses)
    Parallel(calls)                                 independent calls, result is a tuple
    Map(fn, xs, extra)                              parallel map of a global over a List
    Phase()                                         start the next program phase

``Let`` holds a *sequence* of bindings rather than one, so long straight-line code stays
flat (no deep nesting, no recursion-limit trouble in passes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from acrobat.errors import Span
from acrobat.ir.types import FuncType, TensorType, Type


def _ty():
    return field(default=None, kw_only=True)


def _span():
    return field(default=None, compare=False, kw_only=True, repr=False)


class Expr:
    """Base class of IR expressions."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A local variable (function parameter, let binding or pattern variable)."""

    name: str
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Const(Expr):
    """A literal: a host scalar (``int``/``bool``/``float``) or a 0-d float tensor."""

    value: int | float | bool
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class ParamRef(Expr):
    """A model parameter (weight) declared at module level."""

    name: str
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class GlobalRef(Expr):
    """A global function used as a value (the function argument of ``map``)."""

    name: str
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class OpCall(Expr):
    """A call of a registered op; ``attrs`` are static, sorted ``(name, value)`` pairs."""

    op: str
    args: tuple[Expr, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    ty: Type | None = _ty()
    span: Span | None = _span()

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == name:
                return v
        return default


@dataclass(frozen=True, slots=True)
class FnCall(Expr):
    """A call of a global function."""

    fn: str
    args: tuple[Expr, ...]
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class KernelCall(Expr):
    """A call of a kernel (a ``kind="kernel"`` function): ONE node of the run-time DFG.

    ``depth`` is the static depth given by hoisting (the DFG level the call is recorded
    at, whatever the dynamic depth); ``None`` means the dynamic depth of the host program.
    """

    kernel: str
    args: tuple[Expr, ...]
    depth: int | None = None
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class CtorCall(Expr):
    """Construction of an ADT value."""

    ctor: str
    args: tuple[Expr, ...]
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class TupleExpr(Expr):
    """A tuple of values."""

    fields: tuple[Expr, ...]
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Proj(Expr):
    """Field ``index`` of a tuple."""

    tup: Expr
    index: int
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Binding:
    """``var = value`` inside a :class:`Let` block."""

    var: Var
    value: Expr


@dataclass(frozen=True, slots=True)
class Let(Expr):
    """Sequential bindings, then ``body``; each binding sees the ones before it."""

    bindings: tuple[Binding, ...]
    body: Expr
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class If(Expr):
    """A two-way branch on a host ``bool``."""

    cond: Expr
    then: Expr
    orelse: Expr
    ty: Type | None = _ty()
    span: Span | None = _span()


class Pattern:
    """Base class of match patterns."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class PWild(Pattern):
    """``_``: matches anything, binds nothing."""


@dataclass(frozen=True, slots=True)
class PVar(Pattern):
    """Binds the matched value to ``var``."""

    var: Var


@dataclass(frozen=True, slots=True)
class PCtor(Pattern):
    """Matches one constructor and its fields."""

    ctor: str
    fields: tuple[Pattern, ...]


@dataclass(frozen=True, slots=True)
class Clause:
    """``case pattern: body``."""

    pattern: Pattern
    body: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Match(Expr):
    """Pattern matching on an ADT value; clauses are tried in order."""

    scrutinee: Expr
    clauses: tuple[Clause, ...]
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Parallel(Expr):
    """Independent function calls; the result is the tuple of their results."""

    calls: tuple[Expr, ...]
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Map(Expr):
    """``map(fn, xs, *extra)``: ``fn(x, *extra)`` for every element, all independent."""

    fn: str
    xs: Expr
    extra: tuple[Expr, ...] = ()
    ty: Type | None = _ty()
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Phase(Expr):
    """Start the next program phase (only at the top level of the entry function)."""

    ty: Type | None = _ty()
    span: Span | None = _span()


ATOMS = (Var, Const, ParamRef, GlobalRef)


@dataclass(frozen=True, slots=True)
class CtorDef:
    """One constructor of an ADT and its field types."""

    name: str
    fields: tuple[Type, ...]


@dataclass(frozen=True, slots=True)
class AdtDef:
    """An ADT declaration, generic over ``type_params``."""

    name: str
    type_params: tuple[str, ...]
    ctors: tuple[CtorDef, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class ParamDef:
    """A model parameter (weight) declaration."""

    name: str
    ty: TensorType
    span: Span | None = _span()


FN = "fn"
KERNEL = "kernel"


@dataclass(frozen=True, slots=True)
class Function:
    """A global function; ``kind == "kernel"`` marks a primitive (fused, straight-line)
    tensor function that the runtime batches as one unit."""

    name: str
    params: tuple[Var, ...]
    ret: Type
    body: Expr
    kind: str = FN
    span: Span | None = _span()

    @property
    def is_kernel(self) -> bool:
        return self.kind == KERNEL

    @property
    def type(self) -> FuncType:
        return FuncType(tuple(p.ty for p in self.params), self.ret)


@dataclass(frozen=True)
class Module:
    """A whole program: sizes, weights, ADTs and functions; ``entry`` names ``main``."""

    sizes: tuple[tuple[str, int], ...]
    params: tuple[ParamDef, ...]
    adts: tuple[AdtDef, ...]
    functions: tuple[Function, ...]
    entry: str = "main"

    @cached_property
    def function_map(self) -> dict[str, Function]:
        return {f.name: f for f in self.functions}

    @cached_property
    def param_map(self) -> dict[str, ParamDef]:
        return {p.name: p for p in self.params}

    @cached_property
    def adt_map(self) -> dict[str, AdtDef]:
        return {a.name: a for a in self.adts}

    @cached_property
    def ctor_map(self) -> dict[str, tuple[AdtDef, int]]:
        """Constructor name -> (its ADT, its tag)."""
        return {c.name: (a, i) for a in self.adts for i, c in enumerate(a.ctors)}

    @property
    def main(self) -> Function:
        return self.function_map[self.entry]

    def pretty(self) -> str:
        """The deterministic text form (see :mod:`acrobat.ir.printer`)."""
        from acrobat.ir.printer import print_module

        return print_module(self)

    def __str__(self) -> str:
        return self.pretty()

    def _summary(self) -> list[tuple[str, object]]:
        kernels = sum(f.is_kernel for f in self.functions)
        return [
            ("entry", self.entry),
            ("functions", f"{len(self.functions)} ({kernels} kernels)"),
            ("adts", len(self.adts)),
            ("weights", len(self.params)),
            ("sizes", ", ".join(f"{k}={v}" for k, v in self.sizes) or "none"),
        ]

    def __repr__(self) -> str:  # print(module) shows the whole IR; the repr stays short
        from acrobat.reprs import text_summary

        return text_summary("Module", self._summary())

    def _repr_html_(self) -> str:
        from acrobat.reprs import html_summary

        return html_summary("Module", self._summary())
