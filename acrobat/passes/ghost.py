"""AddGhostOps: pad cheaper branches with depth-only no-ops (docs/paper.md §6).

Pattern: an ``if``/``match`` whose branches all take a fixed number of dynamic-depth
steps (see :mod:`acrobat.analysis.branch_costs`) but different numbers, e.g. a SHIFT
(one kernel) next to a no-op branch. Without padding, instances that took the cheap
branch run ahead in depth and never again meet the others in the same bucket. Steps:
append ``ghost(count=k)`` to each branch that is ``k`` steps short, so every instance
leaves the branch at the same depth. Branches that end in a tail call into recursion
(a shift-reduce parser's ``SHIFT; parse(...)`` next to ``decide; REDUCE; parse(...)``)
are compared by the steps BEFORE that call, and padded just before it, so every instance
enters the next recursion step at the same depth. Unlike the artifact (branches of
fewer than 5 kernels only), any fixed counts are padded; inner branches are padded first.

Same values (ghosts compute nothing).
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.branch_costs import BranchCosts
from acrobat.analysis.taint import taint
from acrobat.ir.nodes import Binding, Clause, Expr, Function, If, Let, Match, Module, OpCall, Var
from acrobat.ir.types import UNIT
from acrobat.passes.base import NameSupply, PassContext, Property, map_host_functions


def pad(e: Expr, k: int, names: NameSupply) -> Expr:
    """``e`` with ``k`` ghost steps after its bindings (before its result or tail call)."""
    g = Binding(Var(names.fresh("ghost"), ty=UNIT), OpCall("ghost", (), (("count", k),), ty=UNIT))
    if isinstance(e, Let):
        return dataclasses.replace(e, bindings=e.bindings + (g,))
    return Let((g,), e, ty=e.ty)


class AddGhostOps:
    """Equalize the dynamic depth of branches with fixed, different kernel counts."""

    name = "AddGhostOps"
    requires = frozenset({Property.KERNELS, Property.HOISTED})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.ghost_ops:
            return module

        indep = ctx.options.independence
        fibers = taint(module).fiber_functions if indep else frozenset()

        def rule(f: Function, names: NameSupply, current: Module):
            # costs of the module so far: callees padded before ``f`` count their ghosts;
            # with independence a block costs its longest dependent chain, as it runs
            costs = BranchCosts(current, indep, fibers)

            def one(e: Expr) -> Expr:
                if not isinstance(e, (If, Match)):
                    return e
                extra = costs.padding(e)
                if not any(extra):
                    return e
                ctx.note(self.name, f"{f.name}: branch costs {costs.arms(e)} padded by {extra}")
                if isinstance(e, If):
                    then = pad(e.then, extra[0], names) if extra[0] else e.then
                    orelse = pad(e.orelse, extra[1], names) if extra[1] else e.orelse
                    return dataclasses.replace(e, then=then, orelse=orelse)
                cl = tuple(
                    Clause(c.pattern, pad(c.body, k, names) if k else c.body, span=c.span)
                    for c, k in zip(e.clauses, extra)
                )
                return dataclasses.replace(e, clauses=cl)

            return one

        return dataclasses.replace(module, functions=map_host_functions(module, rule))
