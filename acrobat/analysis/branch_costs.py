"""Kernel counts per branch: how far each path advances the dynamic depth.

The *cost* of an expression is the number of dynamic-depth steps it always takes:
each kernel call without a static depth is one step, a ghost op ``count`` steps, a call
of a non-recursive function its body's cost, ``parallel`` the max over its calls. It is
``None`` (not fixed) when it depends on the input: a call into recursion, a ``map`` (any
length), or an ``if``/``match`` whose branches differ. Ghost operators use this.

A call of a *host-only* function — one that, with everything it calls, records no
dynamic kernel and pads nothing (building a ``List`` with a recursive ``append``) —
costs 0 even when it recurses, and so does a ``map`` of one (:func:`host_only`).

With ``independence`` (``CompileOptions.independence``), a block's cost is its longest
chain of dependent steps (:mod:`acrobat.analysis.independence`), as the host program
then moves the depth; otherwise it is the sum of its bindings' costs.
"""

from __future__ import annotations

from acrobat.analysis.callgraph import call_graph, functions_free_of
from acrobat.analysis.independence import READS, block_deps
from acrobat.ir.nodes import (
    Expr,
    FnCall,
    If,
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    Phase,
)
from acrobat.ir.traversal import walk


def host_only(m: Module) -> frozenset[str]:
    """Functions that, with everything they call (transitively), record no dynamic
    kernel and move no depth: no dynamic kernel call, ghost, tensor read or phase."""

    def moves_depth(e: Expr) -> bool:
        t = type(e)
        return (
            (t is KernelCall and e.depth is None)
            or t is Phase
            or (t is OpCall and (e.op == "ghost" or e.op in READS))
        )

    return functions_free_of(m, moves_depth)


class BranchCosts:
    """Memoized costs of functions, and of expressions on demand."""

    def __init__(self, m: Module, independence: bool = False, fibers: frozenset[str] = frozenset()):
        self.m = m
        self.recursive = call_graph(m).recursive
        self.free = host_only(m)
        self.independence, self.fibers = independence, fibers
        self.memo: dict[str, int | None] = {}

    def function(self, name: str) -> int | None:
        if name in self.free:
            return 0
        if name in self.recursive:
            return None
        if name not in self.memo:
            self.memo[name] = self.cost(self.m.function_map[name].body)
        return self.memo[name]

    def block(self, e: Let, tail) -> int | None:
        """Steps of a block: its bindings' costs, then ``tail(body)``; None if unknown.

        Sequential: the sum. With independence: each binding ends at its cost after the
        latest end among the bindings it depends on; the tail starts after them all."""
        ends: list[int] = []
        for b, dep in zip(e.bindings, block_deps(e, self.fibers)):
            c = self.cost(b.value)
            if c is None:
                return None
            if self.independence:
                ends.append(max((ends[j] for j in dep.deps), default=0) + c)
            else:
                ends.append((ends[-1] if ends else 0) + c)
        c = tail(e.body)
        return None if c is None else max(ends, default=0) + c

    def cost(self, e: Expr) -> int | None:
        t = type(e)
        if t is Let:
            return self.block(e, self.cost)
        if t is KernelCall:
            return 1 if e.depth is None else 0
        if t is OpCall:
            return e.attr("count", 1) if e.op == "ghost" else 0
        if t is FnCall:
            return self.function(e.fn)
        if t is Parallel:
            costs = [self.cost(c) for c in e.calls]
            return None if None in costs else max(costs)
        if t is Map:
            return 0 if e.fn in self.free else None
        if t in (If, Match):
            arms = [e.then, e.orelse] if t is If else [c.body for c in e.clauses]
            costs = {self.cost(a) for a in arms}
            return costs.pop() if len(costs) == 1 else None
        return 0

    def arms(self, e: If | Match) -> list[int | None]:
        """The prefix cost of each arm (see :meth:`prefix`)."""
        arms = [e.then, e.orelse] if isinstance(e, If) else [c.body for c in e.clauses]
        return [self.prefix(a) for a in arms]

    def tails(self, e: If | Match) -> list[bool]:
        """Whether each arm ends in a tail call into recursion (on every path)."""
        arms = [e.then, e.orelse] if isinstance(e, If) else [c.body for c in e.clauses]
        return [self.ends_in_recursion(a) for a in arms]

    def ends_in_recursion(self, e: Expr) -> bool:
        t = type(e)
        if t is Let:
            return self.ends_in_recursion(e.body)
        if t is FnCall:
            return e.fn in self.recursive and e.fn not in self.free
        if t in (If, Match):
            return all(self.tails(e))
        return False

    def padding(self, e: If | Match) -> list[int]:
        """Ghost steps to add to each arm so comparable arms take equal steps.

        Arms that finish (no tail call) are compared by their whole cost, but only when
        no arm continues into recursion: padding a base case to match a recursive step
        would only delay the instances that are done. Arms that continue into recursion
        are compared by the steps before their tail call.
        """
        costs, tails = self.arms(e), self.tails(e)
        arms = [e.then, e.orelse] if isinstance(e, If) else [c.body for c in e.clauses]
        costs = [None if self.reads(a) else c for a, c in zip(arms, costs)]
        group = [i for i, t in enumerate(tails) if t] if any(tails) else list(range(len(costs)))
        known = [costs[i] for i in group if costs[i] is not None]
        if len(known) < 2 or len(set(known)) == 1:
            return [0] * len(costs)
        top = max(known)
        return [
            top - costs[i] if i in group and costs[i] is not None else 0 for i in range(len(costs))
        ]

    def reads(self, e: Expr) -> bool:
        """Whether ``e`` may read a tensor value (``item``/``argmax``, or a call of a fiber
        function): the depth after a read restarts at the phase's base, so no padding
        makes such an arm leave at the depth of the others."""
        for x in walk(e):
            t = type(x)
            if t is OpCall and x.op in READS:
                return True
            if (t is FnCall or t is Map) and x.fn in self.fibers:
                return True
            if t is Parallel and any(c.fn in self.fibers for c in x.calls):
                return True
        return False

    def prefix(self, e: Expr) -> int | None:
        """Steps taken before a final tail call into recursion (all steps if none).

        Arms such as ``SHIFT; parse(...)`` and ``decide; REDUCE; parse(...)`` both end in
        the same recursion; equal prefixes make every instance enter it at one depth.
        """
        t = type(e)
        if t is Let:
            return self.block(e, self.prefix)
        if t is FnCall and e.fn in self.recursive and e.fn not in self.free:
            return 0
        if t in (If, Match):
            costs = set(self.arms(e))
            return costs.pop() if len(costs) == 1 else None
        return self.cost(e)
