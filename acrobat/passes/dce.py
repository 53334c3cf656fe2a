"""EliminateDeadCode: drop unused bindings and unreachable functions.

Every expression of the language is pure except ``phase()`` and ghost ops (they move
depth), so a binding whose variable is never used is dropped, scanning each block
backwards with the set of live names. Functions not reachable from the entry (e.g. the
originals of inlined or specialized functions) are dropped too.

Needs: unique names per function. Guarantees: same results, fewer bindings.
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.callgraph import call_graph
from acrobat.ir.nodes import Binding, Expr, Let, Module, OpCall, Phase, Var
from acrobat.ir.traversal import post_order_map, walk
from acrobat.passes.base import PassContext


def _effectful(e: Expr) -> bool:
    return isinstance(e, Phase) or (isinstance(e, OpCall) and e.op == "ghost")


def used_names(e: Expr) -> set[str]:
    return {x.name for x in walk(e) if isinstance(x, Var)}


def prune_block(e: Expr) -> Expr:
    """One block with its dead bindings removed (inner blocks are already pruned)."""
    if not isinstance(e, Let):
        return e
    live = used_names(e.body)
    kept: list[Binding] = []
    for b in reversed(e.bindings):
        if b.var.name in live or _effectful(b.value):
            kept.append(b)
            live |= used_names(b.value)
    kept.reverse()
    if not kept:
        return e.body
    return dataclasses.replace(e, bindings=tuple(kept))


class EliminateDeadCode:
    """Remove unused pure bindings and unreachable functions."""

    name = "EliminateDeadCode"

    def apply(self, module: Module, ctx: PassContext) -> Module:
        fns = []
        removed = 0
        for f in module.functions:
            before = sum(len(x.bindings) for x in walk(f.body) if isinstance(x, Let))
            body = post_order_map(f.body, prune_block)
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
