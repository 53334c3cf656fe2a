"""InlineSmallFunctions: inline calls of small non-recursive functions.

Pattern: ``let %y = @cell(%x, %h)`` where ``@cell`` is not recursive, is not the entry,
and has at most ``options.inline_max_bindings`` bindings once its own calls are inlined
(so the program grows by at most that much per call site: linear, never exponential). Steps: rename every variable
bound in the callee to a fresh name of the caller, substitute the arguments (atoms,
since the input is in ANF) for the parameters, and splice the callee's bindings before
the call's binding, which then binds the callee's result. Calls inside ``parallel`` and
``map`` are left alone: they are independent by declaration, and inlining them would
serialize them. Why: fewer host calls, and kernels of the callee fuse with the caller's.

Same results.
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.callgraph import call_graph
from acrobat.ir.nodes import (
    Binding,
    Clause,
    Expr,
    FnCall,
    Function,
    Let,
    Match,
    Module,
    PCtor,
    PVar,
    Var,
)
from acrobat.ir.traversal import bound_vars, post_order_map, walk
from acrobat.passes.base import NameSupply, PassContext, Property, map_functions


def size(f: Function) -> int:
    return sum(len(e.bindings) for e in walk(f.body) if isinstance(e, Let)) + 1


def rename(body: Expr, mapping: dict[str, Expr]) -> Expr:
    """``body`` with variables replaced (bindings included) per ``mapping``."""

    def one(e: Expr) -> Expr:
        if isinstance(e, Var) and e.name in mapping:
            return dataclasses.replace(mapping[e.name], span=e.span)
        if isinstance(e, Let):
            bs = tuple(Binding(mapping.get(b.var.name, b.var), b.value) for b in e.bindings)
            return dataclasses.replace(e, bindings=bs)
        return e

    def pat(p):
        if isinstance(p, PVar) and p.var.name in mapping:
            return PVar(mapping[p.var.name])
        if isinstance(p, PCtor):
            return PCtor(p.ctor, tuple(pat(q) for q in p.fields))
        return p

    def with_patterns(e: Expr) -> Expr:
        e = one(e)
        if isinstance(e, Match):
            cl = tuple(Clause(pat(c.pattern), c.body, span=c.span) for c in e.clauses)
            return dataclasses.replace(e, clauses=cl)
        return e

    return post_order_map(body, with_patterns)


class InlineSmallFunctions:
    """Inline small non-recursive functions at their direct call sites."""

    name = "InlineSmallFunctions"
    requires = frozenset({Property.ANF})  # arguments are atoms: substituting them is safe

    def apply(self, module: Module, ctx: PassContext) -> Module:
        cg = call_graph(module)
        limit = ctx.options.inline_max_bindings

        def candidate(f: Function) -> bool:
            return not f.is_kernel and f.name != module.entry and f.name not in cg.recursive

        # Bottom-up, so an inlined body has no inlinable calls left; a callee is judged by
        # its size *after* its own calls were inlined, so inlining adds at most ``limit``
        # bindings per call site (judged before, f(x) = g(g(x)) chains double at each level).
        small: set[str] = set()
        done: dict[str, Function] = {}
        for name in (n for scc in cg.sccs for n in scc):
            f = done.get(name, module.function_map[name])
            done[name] = self.inline_in(f, small, done, ctx)
            if candidate(done[name]) and size(done[name]) <= limit:
                small.add(name)
        if all(done[f.name] is f for f in module.functions if f.name in done):
            return module
        return map_functions(module, lambda f: done.get(f.name, f))

    def inline_in(self, f: Function, small, done, ctx: PassContext) -> Function:
        names = NameSupply(f)
        count = 0

        def splice(e: Expr) -> Expr:
            nonlocal count
            if not isinstance(e, Let):
                return e
            out: list[Binding] = []
            for b in e.bindings:
                v = b.value
                if isinstance(v, FnCall) and v.fn in small:
                    callee = done[v.fn]
                    mapping: dict[str, Expr] = {p.name: a for p, a in zip(callee.params, v.args)}
                    for bv in bound_vars(callee.body):
                        mapping[bv.name] = dataclasses.replace(bv, name=names.fresh(bv.name))
                    body = rename(callee.body, mapping)
                    if isinstance(body, Let):
                        out.extend(body.bindings)
                        body = body.body
                    out.append(Binding(b.var, body))
                    count += 1
                else:
                    out.append(b)
            return dataclasses.replace(e, bindings=tuple(out))

        body = post_order_map(f.body, splice)
        if not count:
            return f
        ctx.note(self.name, f"{f.name}: inlined {count} call(s)")
        return dataclasses.replace(f, body=body)
