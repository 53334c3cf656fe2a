"""EliminateDeadCode: drop unused bindings and unreachable functions.

Every expression of the language is pure except ``phase()`` and ghost ops (they move
depth), so a binding whose variable is never used is dropped, scanning each block
backwards with the set of live names. Functions not reachable from the entry (e.g. the
originals of inlined or specialized functions) are dropped too.

A binding that *may fail* stays even when unused: the reference interpreter raises for
an instance whose (dead) ``embed`` reads outside its table or whose host division is by
zero, and a batched run must raise the same instance's error. May fail: ``embed`` (unless
its id is a constant inside the table), host ``/ // % **``, ``scalar`` of a host int
(the int64 range), ``xs[k]``, ``max``, ``argmax`` and ``attend`` of a List (an empty one),
``int()``/``float()`` of a host number, and calls of functions or kernels that contain any
of these.

Same results and the same errors, fewer bindings.
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.callgraph import call_graph
from acrobat.ir.list_ops import NEEDS_AN_ELEMENT
from acrobat.ir.nodes import (
    Binding,
    Const,
    Expr,
    FnCall,
    KernelCall,
    Let,
    Map,
    Module,
    OpCall,
    Phase,
)
from acrobat.ir.traversal import post_order_map, var_names, walk
from acrobat.ir.types import BOOL, FLOAT, TensorType
from acrobat.passes.base import PassContext, Property


def _effectful(e: Expr) -> bool:
    return isinstance(e, Phase) or (isinstance(e, OpCall) and e.op == "ghost")


def op_may_fail(e: OpCall) -> bool:
    """Whether the op can raise for some instance (see the module docstring)."""
    if e.op == "embed":
        idx, table = e.args[1], e.args[0].ty
        rows = table.shape[0] if isinstance(table, TensorType) and table.shape else 0
        return not (isinstance(idx, Const) and 0 <= idx.value < rows)
    if e.op in ("h.floordiv", "h.mod"):
        return not (isinstance(e.args[1], Const) and e.args[1].value != 0)
    if e.op in ("h.truediv", "h.pow"):  # also float overflow of huge ints and powers
        return not all(isinstance(a, Const) for a in e.args)
    if e.op == "scalar":
        return e.args[0].ty != FLOAT and not isinstance(e.args[0], Const)
    if e.op == "h.nth" or e.op in NEEDS_AN_ELEMENT:  # out of range; an empty list
        return True
    if e.op in ("h.int", "h.float"):  # int(inf), int(nan); float of an int past 1e308
        return not isinstance(e.args[0], Const) and e.args[0].ty != BOOL
    return False


def failing_functions(m: Module) -> frozenset[str]:
    """Functions and kernels whose run may raise: a may-fail op inside, or a call of one."""
    graph = call_graph(m)
    local = {
        f.name: any(isinstance(x, OpCall) and op_may_fail(x) for x in walk(f.body))
        for f in m.functions
    }
    out: set[str] = set()
    for scc in graph.sccs:  # callees before callers
        if any(local[f] or any(c in out for c in graph.callees[f]) for f in scc):
            out.update(scc)
    return frozenset(out)


def may_fail(e: Expr, failing: frozenset[str]) -> bool:
    for x in walk(e):
        if isinstance(x, OpCall) and op_may_fail(x):
            return True
        if isinstance(x, (FnCall, Map)) and x.fn in failing:
            return True
        if isinstance(x, KernelCall) and x.kernel in failing:
            return True
    return False


def prune_block(e: Expr, failing: frozenset[str] = frozenset()) -> Expr:
    """One block with its dead bindings removed (inner blocks are already pruned)."""
    if not isinstance(e, Let):
        return e
    live = var_names(e.body)
    kept: list[Binding] = []
    for b in reversed(e.bindings):
        if b.var.name in live or _effectful(b.value) or may_fail(b.value, failing):
            kept.append(b)
            live |= var_names(b.value)
    kept.reverse()
    if not kept:
        return e.body
    return dataclasses.replace(e, bindings=tuple(kept))


class EliminateDeadCode:
    """Remove unused pure bindings and unreachable functions."""

    name = "EliminateDeadCode"
    requires: frozenset[Property] = frozenset()

    def apply(self, module: Module, ctx: PassContext) -> Module:
        fns = []
        removed = 0
        failing = failing_functions(module)
        for f in module.functions:
            before = sum(len(x.bindings) for x in walk(f.body) if isinstance(x, Let))
            body = post_order_map(f.body, lambda e: prune_block(e, failing))
            after = sum(len(x.bindings) for x in walk(body) if isinstance(x, Let))
            removed += before - after
            fns.append(dataclasses.replace(f, body=body))
        out = dataclasses.replace(module, functions=tuple(fns))
        reachable = call_graph(out).reachable
        dropped = [f.name for f in out.functions if f.name not in reachable]
        if removed:
            ctx.note(self.name, f"removed {removed} unused binding(s)")
        if dropped:
            ctx.note(self.name, f"dropped unreachable function(s) {', '.join(dropped)}")
        keep = tuple(f for f in out.functions if f.name in reachable)
        return dataclasses.replace(out, functions=keep)
