"""SpecializeWeights: clone functions per weight set (docs/paper.md §1).

Pattern: a function whose parameter receives different weights at different call sites
(a cell shared by a forward and a backward RNN, six encoder layers sharing one layer
function). Steps: run :func:`~acrobat.analysis.taint.model_parameter_taint`, which
finds every (function, weight context) reachable from the entry; give each context its
own clone (the first keeps the name, later ones are ``<name>_dup<k>`` as in the
artifact); in each clone, replace the parameters that always hold weights by the
weights themselves (``$W``), drop them from the signature and from every call site.
Why it is correct: a clone is only called from sites whose context it was made for, so
substituting the context's weights for its parameters does not change any value.
What it buys: in every kernel each weight argument is one known parameter — reused
across the batch, never gathered — and kernel identity alone is the batching signature.

Same results; unreachable functions are dropped.
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.taint import AbstractEval, all_weights, model_parameter_taint
from acrobat.ir.nodes import (
    Expr,
    FnCall,
    Function,
    Map,
    Module,
    ParamRef,
    Proj,
    TupleExpr,
    Var,
)
from acrobat.ir.traversal import bound_vars, post_order_map
from acrobat.passes.base import PassContext, Property, fresh_global


def weight_expr(a, ty) -> Expr:
    """The expression for an all-weights abstract value (``$W`` or a tuple of them)."""
    if isinstance(a, str):
        return ParamRef(a, ty=ty)
    return TupleExpr(tuple(weight_expr(x, t) for x, t in zip(a, ty.fields)), ty=ty)


class SpecializeWeights:
    """One clone per weight context; weight parameters become the weights themselves."""

    name = "SpecializeWeights"
    requires = frozenset({Property.ANF})  # call arguments are atoms
    provides = frozenset({Property.SPECIALIZED})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.taint_specialization:
            return module
        contexts = model_parameter_taint(module).contexts
        names = {}
        taken = set(module.function_map)
        for fn, cs in contexts.items():
            for k, c in enumerate(cs):
                names[(fn, c)] = fn if k == 0 else fresh_global(f"{fn}_dup", taken, start=1)
        out = []
        for f in module.functions:
            if f.is_kernel:
                out.append(f)
                continue
            for c in contexts.get(f.name, []):
                out.append(self.clone(module, f, c, names[(f.name, c)], names))
                if names[(f.name, c)] != f.name:
                    weights = [w for a in c if a is not None for w in _flat(a)]
                    ctx.note(
                        self.name, f"{f.name} -> {names[(f.name, c)]} for {', '.join(weights)}"
                    )
        for fn, cs in contexts.items():
            dropped = [p.name for p, a in zip(module.function_map[fn].params, cs[0]) if _subst(a)]
            if dropped and len(cs) == 1:
                ctx.note(self.name, f"{fn}: weight parameter(s) {', '.join(dropped)} fixed")
        return dataclasses.replace(module, functions=tuple(out))

    def clone(self, m: Module, f: Function, c: tuple, new_name: str, names) -> Function:
        ev = AbstractEval(f, c)
        ev.value(f.body)
        subst = {p.name: weight_expr(a, p.ty) for p, a in zip(f.params, c) if _subst(a)}
        for var, a in ev.env.items():
            if var not in subst and _subst(a):
                ty = _type_of_var(f, var)
                if ty is not None:
                    subst[var] = weight_expr(a, ty)

        def rewrite(e: Expr) -> Expr:
            if isinstance(e, Var) and e.name in subst:
                return subst[e.name]
            if isinstance(e, Proj) and isinstance(e.tup, TupleExpr):
                return e.tup.fields[e.index]
            if isinstance(e, FnCall) and not m.function_map[e.fn].is_kernel:
                cc = self.call_context(ev, e.args)
                keep = tuple(a for a, x in zip(e.args, cc) if not _subst(x))
                return dataclasses.replace(e, fn=names[(e.fn, cc)], args=keep)
            if isinstance(e, Map):
                cc = (None, *self.call_context(ev, e.extra))
                keep = tuple(a for a, x in zip(e.extra, cc[1:]) if not _subst(x))
                return dataclasses.replace(e, fn=names[(e.fn, cc)], extra=keep)
            return e

        # contexts are computed on the ORIGINAL arguments, before substitution
        body = _rewrite_calls_first(f.body, rewrite)
        params = tuple(p for p, a in zip(f.params, c) if not _subst(a))
        return dataclasses.replace(f, name=new_name, params=params, body=body)

    @staticmethod
    def call_context(ev: AbstractEval, args) -> tuple:
        return tuple(ev.value(a) for a in args)


def _subst(a) -> bool:
    return a is not None and all_weights(a)


def _flat(a) -> list[str]:
    return [a] if isinstance(a, str) else [w for x in a for w in _flat(x)] if a else []


def _type_of_var(f: Function, name: str):
    for v in bound_vars(f.body):
        if v.name == name:
            return v.ty
    return None


def _rewrite_calls_first(body: Expr, rewrite) -> Expr:
    """Rewrite call nodes while their arguments are still the original variables.

    ``post_order_map`` rebuilds children first, which would replace weight variables in
    call arguments before the call's context is computed; so calls are rewritten in a
    pre-pass on the original tree, then variables.
    """
    calls_done = post_order_map(body, lambda e: rewrite(e) if isinstance(e, (FnCall, Map)) else e)
    return post_order_map(calls_done, lambda e: e if isinstance(e, (FnCall, Map)) else rewrite(e))
