"""FoldWeightExpressions: compute weight-only expressions once, at compile time.

Pattern: a tensor op whose every operand is a weight (``$W``), a constant or a value
already folded — e.g. ``transpose($W)`` or ``$W1 + $W2`` inside a recursive cell, which
the program would otherwise recompute for every node of every instance. Steps: evaluate
the op with the reference op implementations on the weights given to ``compile``, add
the result as a new derived weight ``_fold<k>`` (``ctx.params`` gets its value), and
replace the binding's value by ``$_fold<k>``. Ops with no weight operand at all
(``zeros(H)``) are left alone: they are cheap and folding them would turn an ordinary
value into a weight. (docs/paper.md §1: "ops that depend only on weights stay
unbatched".)

Reads the weights in ``ctx.params``. Same results (same op implementations).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from acrobat.ir.nodes import Binding, Const, Expr, Let, Module, OpCall, ParamDef, ParamRef, Var
from acrobat.ir.ops import REGISTRY, OpKind
from acrobat.ir.traversal import post_order_map
from acrobat.ir.types import TensorType
from acrobat.passes.base import PassContext, Property


class FoldWeightExpressions:
    """Replace weight-only tensor ops by derived weights computed once."""

    name = "FoldWeightExpressions"
    requires = frozenset({Property.ANF})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.taint_specialization:
            return module
        new_params: list[ParamDef] = []
        cache: dict[tuple, str] = {}

        def value_of(a: Expr, env: dict[str, str]):
            if isinstance(a, ParamRef):
                return ctx.params[a.name]
            if isinstance(a, Var):
                return ctx.params[env[a.name]]
            return (
                np.asarray(a.value, dtype=a.ty.dtype) if isinstance(a.ty, TensorType) else a.value
            )

        def fold_block(e: Expr) -> Expr:
            if not isinstance(e, Let):
                return e
            env: dict[str, str] = {}
            out = []
            for b in e.bindings:
                v = b.value
                if _foldable(v, env):
                    key = (v.op, tuple(_key(a, env) for a in v.args), v.attrs)
                    name = cache.get(key)
                    if name is None:
                        value = REGISTRY[v.op].impl(
                            *(value_of(a, env) for a in v.args), **dict(v.attrs)
                        )
                        # np.array, not ascontiguousarray: that makes a 0-d value 1-d
                        derived = ctx.derive("_fold", np.array(value, dtype=v.ty.dtype, order="C"))
                        new_params.append(derived)
                        name = derived.name
                        cache[key] = name
                        ctx.note(
                            self.name, f"{b.var.name} = {v.op}(...) -> ${name} {list(v.ty.shape)}"
                        )
                    env[b.var.name] = name
                    out.append(Binding(b.var, ParamRef(name, ty=v.ty, span=v.span)))
                else:
                    out.append(b)
            body = e.body
            if isinstance(body, Var) and body.name in env:
                body = ParamRef(env[body.name], ty=body.ty)
            return dataclasses.replace(e, bindings=tuple(out), body=body)

        fns = []
        for f in module.functions:
            body = post_order_map(f.body, fold_block)
            fns.append(dataclasses.replace(f, body=_propagate(body)))
        return dataclasses.replace(
            module, params=module.params + tuple(new_params), functions=tuple(fns)
        )


def _foldable(v: Expr, env: dict[str, str]) -> bool:
    if not isinstance(v, OpCall) or not isinstance(v.ty, TensorType):
        return False
    if REGISTRY[v.op].kind in (OpKind.HOST, OpKind.HOST_READ, OpKind.CREATE, OpKind.GHOST):
        return False
    has_weight = False
    for a in v.args:
        if isinstance(a, ParamRef) or (isinstance(a, Var) and a.name in env):
            has_weight = True
        elif not (isinstance(a, Const) and isinstance(a.ty, TensorType)):
            return False
    return has_weight


def _key(a: Expr, env: dict[str, str]):
    if isinstance(a, ParamRef):
        return ("$", a.name)
    if isinstance(a, Var):
        return ("$", env[a.name])
    return ("c", a.value)


def _propagate(body: Expr) -> Expr:
    """Replace uses of variables bound to a weight by the weight itself."""
    alias: dict[str, ParamRef] = {}

    def collect(e: Expr) -> Expr:
        if isinstance(e, Let):
            for b in e.bindings:
                if isinstance(b.value, ParamRef):
                    alias[b.var.name] = b.value
        return e

    post_order_map(body, collect)
    if not alias:
        return body
    return post_order_map(
        body, lambda e: alias[e.name] if isinstance(e, Var) and e.name in alias else e
    )
