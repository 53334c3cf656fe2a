"""One generic traversal of IR expressions.

``children(e)`` lists sub-expressions in evaluation order and ``with_children(e, cs)``
rebuilds a node from new ones; everything else (walks, rewrites, variable names, the
structural key of a kernel) is built on those two. Walks use an explicit stack, never
Python recursion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

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
    OpCall,
    Parallel,
    Pattern,
    PCtor,
    Phase,
    Proj,
    PVar,
    TupleExpr,
    Var,
)


def children(e: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions of ``e`` in evaluation order."""
    t = type(e)
    if t in ATOMS or t is Phase:
        return ()
    if t is OpCall or t is FnCall or t is CtorCall or t is KernelCall:
        return e.args
    if t is TupleExpr:
        return e.fields
    if t is Proj:
        return (e.tup,)
    if t is Let:
        return tuple(b.value for b in e.bindings) + (e.body,)
    if t is If:
        return (e.cond, e.then, e.orelse)
    if t is Match:
        return (e.scrutinee,) + tuple(c.body for c in e.clauses)
    if t is Parallel:
        return e.calls
    if t is Map:
        return (e.xs,) + e.extra
    raise TypeError(f"not an IR expression: {e!r}")


def with_children(e: Expr, cs: tuple[Expr, ...]) -> Expr:
    """``e`` with its direct sub-expressions replaced (same order as :func:`children`)."""
    t = type(e)
    if t in ATOMS or t is Phase:
        return e
    if t is OpCall or t is FnCall or t is CtorCall or t is KernelCall:
        return dataclasses.replace(e, args=tuple(cs))
    if t is TupleExpr:
        return dataclasses.replace(e, fields=tuple(cs))
    if t is Proj:
        return dataclasses.replace(e, tup=cs[0])
    if t is Let:
        n = len(e.bindings)
        bs = tuple(Binding(b.var, v) for b, v in zip(e.bindings, cs[:n], strict=True))
        return dataclasses.replace(e, bindings=bs, body=cs[n])
    if t is If:
        return dataclasses.replace(e, cond=cs[0], then=cs[1], orelse=cs[2])
    if t is Match:
        cl = tuple(
            Clause(c.pattern, b, span=c.span) for c, b in zip(e.clauses, cs[1:], strict=True)
        )
        return dataclasses.replace(e, scrutinee=cs[0], clauses=cl)
    if t is Parallel:
        return dataclasses.replace(e, calls=tuple(cs))
    if t is Map:
        return dataclasses.replace(e, xs=cs[0], extra=tuple(cs[1:]))
    raise TypeError(f"not an IR expression: {e!r}")


def walk(e: Expr) -> Iterator[Expr]:
    """Every expression under ``e`` (``e`` included), pre-order, without recursion."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(children(x)))


def post_order_map(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Rebuild ``e`` bottom-up, applying ``fn`` to every node after its children."""
    out: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, done = stack.pop()
        if done:
            n = len(children(x))
            cs = tuple(out[len(out) - n :]) if n else ()
            if n:
                del out[len(out) - n :]
            out.append(fn(with_children(x, cs) if n else x))
        else:
            stack.append((x, True))
            for c in reversed(children(x)):
                stack.append((c, False))
    return out[0]


def pattern_vars(p: Pattern) -> list[Var]:
    """Variables bound by a pattern, left to right."""
    out: list[Var] = []
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, PVar):
            out.append(q.var)
        elif isinstance(q, PCtor):
            stack.extend(reversed(q.fields))
    return out


def bound_vars(e: Expr) -> list[Var]:
    """Every variable bound anywhere inside ``e`` (let bindings and patterns)."""
    out: list[Var] = []
    for x in walk(e):
        if isinstance(x, Let):
            out.extend(b.var for b in x.bindings)
        elif isinstance(x, Match):
            for c in x.clauses:
                out.extend(pattern_vars(c.pattern))
    return out


def var_names(e: Expr) -> set[str]:
    """Names of every variable read in ``e``, including those bound inside ``e``.

    A ``let`` binding's own variable is not read by the binding, so a name bound and
    never used does not appear.
    """
    return {x.name for x in walk(e) if isinstance(x, Var)}


def kernel_key(f: Function) -> tuple:
    """A structural key of a kernel, its variables renamed by position.

    Two kernels with the same key compute the same thing (same ops, attributes, weights
    and types, in the same order) whatever their variables are called; fusion and
    coarsening use it to share one kernel between structurally identical groups. ``f``'s
    body must be a ``let`` block (a kernel body always is).
    """
    mapping: dict[str, str] = {}
    for i, p in enumerate(f.params):
        mapping[p.name] = f"p{i}"
    for i, b in enumerate(f.body.bindings):
        mapping[b.var.name] = f"v{i}"

    def ren(e: Expr) -> Expr:
        if isinstance(e, Var):
            return Var(mapping.get(e.name, e.name), ty=e.ty)
        return e

    body = post_order_map(f.body, ren)
    bs = tuple(Binding(Var(mapping[b.var.name], ty=b.var.ty), b.value) for b in body.bindings)
    params = tuple(Var(mapping[p.name], ty=p.ty) for p in f.params)
    return (params, bs, body.body)
