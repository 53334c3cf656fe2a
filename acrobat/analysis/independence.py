"""Independence inside a block: which bindings wait for which (docs/paper.md §4).

The language is pure, so the only order a block's bindings need is their data
dependencies: ``y = f(a); z = g(b)`` may start at the same depth even though the source
writes one after the other. This module classifies every binding of a ``let`` block:

* a *barrier* keeps program order both ways: it starts when everything before it in the
  block is done and everything after it starts after it. Barriers are the bindings that
  may suspend the fiber or move depth without data (a tensor-to-host read ``item`` /
  ``argmax``, a call of a fiber function, ``parallel``/``map`` over fiber functions,
  ``phase()``, and ``ghost`` padding). After a read every value recorded before it has
  been executed, so later bindings cannot gain by starting earlier: the host program
  restarts the depth there (``codegen/host.py``).
* a *step* moves the depth (a dynamic kernel call, a call, ``map``, ``parallel``, or a
  compound value containing one of them): it starts at the max of the depths its
  operands are ready at and its result is ready at the depth it returns.
* anything else (host arithmetic, tuples, projections, constructors, hoisted kernels)
  moves nothing: its result is ready when its operands are.

``InferIndependence`` (``passes/independence.py``) reports what this finds; the host
program (``codegen/host.py``) and the branch costs (``analysis/branch_costs.py``) follow
it when ``CompileOptions.independence`` is on.
"""

from __future__ import annotations

from dataclasses import dataclass

from acrobat.ir.list_ops import LIST_REDUCTIONS
from acrobat.ir.nodes import (
    Expr,
    FnCall,
    KernelCall,
    Let,
    Map,
    OpCall,
    Parallel,
    Phase,
)
from acrobat.ir.traversal import var_names, walk

READS = ("item", "argmax", *LIST_REDUCTIONS)
"""The ops that wait for tensor values (reads, and list reductions, answered as reads are)."""


def is_barrier(e: Expr, fibers: frozenset[str]) -> bool:
    """Whether binding ``e`` keeps program order (see the module doc)."""
    for x in walk(e):
        t = type(x)
        if t is OpCall and (x.op in READS or x.op == "ghost"):
            return True
        if t is Phase:
            return True
        if (t is FnCall or t is Map) and x.fn in fibers:
            return True
        if t is Parallel and any(c.fn in fibers for c in x.calls):
            return True
    return False


def moves_depth(e: Expr) -> bool:
    """Whether evaluating ``e`` can move the depth (a step or a barrier)."""
    for x in walk(e):
        t = type(x)
        if t is KernelCall and x.depth is None:
            return True
        if t in (FnCall, Map, Parallel, Phase):
            return True
        if t is OpCall and (x.op in READS or x.op == "ghost"):
            return True
    return False


@dataclass(frozen=True)
class BindingDeps:
    """One binding of a block: the earlier bindings it reads (indices), and its kind."""

    index: int
    var: str
    deps: tuple[int, ...]
    barrier: bool
    step: bool


def block_deps(e: Let, fibers: frozenset[str]) -> list[BindingDeps]:
    """The direct dependencies of every binding of ``e`` on earlier bindings.

    A barrier depends on every earlier binding, and every later binding on the barrier."""
    out: list[BindingDeps] = []
    where: dict[str, int] = {}
    last_barrier = -1
    for i, b in enumerate(e.bindings):
        barrier = is_barrier(b.value, fibers)
        if barrier:
            deps = tuple(range(i))
        else:
            reads = var_names(b.value)
            deps = {where[n] for n in reads if n in where}
            if last_barrier >= 0:
                deps.add(last_barrier)
            deps = tuple(sorted(deps))
        out.append(BindingDeps(i, b.var.name, deps, barrier, moves_depth(b.value)))
        where[b.var.name] = i
        if barrier:
            last_barrier = i
    return out


def independent_steps(e: Let, fibers: frozenset[str]) -> list[tuple[str, str]]:
    """Pairs of steps of ``e`` (by variable) that sequential depth would order but no
    data dependency does: the second does not depend, even transitively, on the first."""
    deps = block_deps(e, fibers)
    reach: list[set[int]] = []
    for d in deps:
        r = set(d.deps)
        for j in d.deps:
            r |= reach[j]
        reach.append(r)
    steps = [d for d in deps if d.step and not d.barrier]
    pairs = []
    for a_i, a in enumerate(steps):
        for b in steps[a_i + 1 :]:
            if a.index not in reach[b.index]:
                pairs.append((a.var, b.var))
    return pairs
