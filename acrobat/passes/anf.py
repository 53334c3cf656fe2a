"""ToANF: A-normal form (ACRoBat runs on Relay in ANF).

What it does: every argument of an op, function, kernel or constructor call, tuple,
projection, ``map`` and every ``if`` condition / ``match`` scrutinee becomes an atom
(variable, constant, weight or global); every intermediate result is named by a ``let``.
Nested ``let`` blocks in value position are flattened into the enclosing block.

Branch bodies (if/match arms, function bodies) are blocks. Types and evaluation
unchanged.
"""

from __future__ import annotations

import dataclasses

from acrobat.ir.nodes import (
    ATOMS,
    Binding,
    Clause,
    CtorCall,
    Expr,
    FnCall,
    Function,
    If,
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    Proj,
    TupleExpr,
    Var,
)
from acrobat.passes.base import NameSupply, PassContext, Property, map_functions


def make_block(bindings: list[Binding], body: Expr) -> Expr:
    """``Let(bindings, body)``, or ``body`` alone when there are no bindings."""
    if not bindings:
        return body
    return Let(tuple(bindings), body, ty=body.ty, span=getattr(body, "span", None))


class _ANF:
    def __init__(self, fn: Function):
        self.names = NameSupply(fn)

    def block(self, e: Expr) -> Expr:
        out: list[Binding] = []
        result = self.simple(e, out)
        if type(result) is OpCall:  # a block ends in an atom, a call, a tuple or control flow
            result = self.atom(result, out)
        return make_block(out, result)

    def atom(self, e: Expr, out: list[Binding]) -> Expr:
        if type(e) in ATOMS:
            return e
        value = self.simple(e, out)
        v = Var(self.names.fresh("t"), ty=e.ty, span=getattr(e, "span", None))
        out.append(Binding(v, value))
        return v

    def simple(self, e: Expr, out: list[Binding]) -> Expr:
        """``e`` with atomic operands; the bindings it needs are appended to ``out``."""
        t = type(e)
        if t in ATOMS:
            return e
        if t is Let:
            for b in e.bindings:
                out.append(Binding(b.var, self.simple(b.value, out)))
            return self.simple(e.body, out)
        if t in (OpCall, FnCall, CtorCall, KernelCall):
            return dataclasses.replace(e, args=tuple(self.atom(a, out) for a in e.args))
        if t is TupleExpr:
            return dataclasses.replace(e, fields=tuple(self.atom(a, out) for a in e.fields))
        if t is Proj:
            return dataclasses.replace(e, tup=self.atom(e.tup, out))
        if t is If:
            return dataclasses.replace(
                e, cond=self.atom(e.cond, out), then=self.block(e.then), orelse=self.block(e.orelse)
            )
        if t is Match:
            clauses = tuple(Clause(c.pattern, self.block(c.body), span=c.span) for c in e.clauses)
            return dataclasses.replace(e, scrutinee=self.atom(e.scrutinee, out), clauses=clauses)
        if t is Parallel:
            calls = tuple(
                dataclasses.replace(c, args=tuple(self.atom(a, out) for a in c.args))
                for c in e.calls
            )
            return dataclasses.replace(e, calls=calls)
        if t is Map:
            return dataclasses.replace(
                e, xs=self.atom(e.xs, out), extra=tuple(self.atom(a, out) for a in e.extra)
            )
        return e  # Phase


class ToANF:
    """Put every function into A-normal form."""

    name = "ToANF"
    requires: frozenset[Property] = frozenset()
    provides = frozenset({Property.ANF})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        def one(f: Function) -> Function:
            return dataclasses.replace(f, body=_ANF(f).block(f.body))

        return map_functions(module, one)
