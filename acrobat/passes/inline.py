"""InlineSmallFunctions: inline calls of small non-recursive functions.

Pattern: ``let %y = @cell(%x, %h)`` where ``@cell`` is not recursive, is not the entry,
and has at most ``options.inline_max_bindings`` bindings. Steps: rename every variable
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
        small = {
            f.name
            for f in module.functions
            if not f.is_kernel
            and f.name != module.entry
            and f.name not in cg.recursive
            and size(f) <= limit
        }
        if not small:
            return module
        # inline bottom-up so an inlined body has no inlinable calls left
        order = [n for scc in cg.sccs for n in scc]
        done: dict[str, Function] = {}
        for name in order:
            f = done.get(name, module.function_map[name])
            done[name] = self.inline_in(f, small, done, ctx)
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
        if count:
            ctx.note(self.name, f"{f.name}: inlined {count} call(s)")
        return dataclasses.replace(f, body=body)
