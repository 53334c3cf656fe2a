"""The call graph and its recursion SCCs (mutual recursion included)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

from acrobat.ir.nodes import Expr, FnCall, KernelCall, Map, Module
from acrobat.ir.traversal import walk


@dataclass(frozen=True)
class CallGraphResult:
    """Callees per function, strongly connected components and recursion facts."""

    callees: dict[str, tuple[str, ...]]
    sccs: tuple[tuple[str, ...], ...]  # callees before callers (reverse topological)
    recursive: frozenset[str]  # functions on a cycle (self or mutual recursion)
    reachable: frozenset[str]  # from the entry function

    def scc_of(self, fn: str) -> tuple[str, ...]:
        return next(s for s in self.sccs if fn in s)


def callees_of(body) -> list[str]:
    """Functions and kernels a body calls, in first-call order."""
    out: list[str] = []
    for e in walk(body):
        name = (
            e.fn
            if isinstance(e, (FnCall, Map))
            else e.kernel
            if isinstance(e, KernelCall)
            else None
        )
        if name is not None and name not in out:
            out.append(name)
    return out


_GRAPHS: dict[int, tuple[weakref.ref, CallGraphResult]] = {}  # id(module) -> its graph


def call_graph(m: Module) -> CallGraphResult:
    """The call graph of ``m``: made once per module object (modules are immutable, and
    a compile asks for the graph of one module many times) and kept while it lives."""
    entry = _GRAPHS.get(id(m))
    if entry is not None and entry[0]() is m:
        return entry[1]
    result = _call_graph(m)
    key = id(m)
    _GRAPHS[key] = (weakref.ref(m, lambda _r: _GRAPHS.pop(key, None)), result)
    return result


def _call_graph(m: Module) -> CallGraphResult:
    """Tarjan's algorithm with an explicit stack (no recursion limit)."""
    callees = {f.name: tuple(callees_of(f.body)) for f in m.functions}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    sccs: list[tuple[str, ...]] = []
    counter = 0
    for root in callees:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = callees[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                sccs.append(tuple(sorted(comp)))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    recursive = {f for comp in sccs for f in comp if len(comp) > 1 or f in callees[f]}
    reachable = set()
    todo = [m.entry]
    while todo:
        f = todo.pop()
        if f in reachable or f not in callees:
            continue
        reachable.add(f)
        todo.extend(callees[f])
    return CallGraphResult(callees, tuple(sccs), frozenset(recursive), frozenset(reachable))


def functions_free_of(m: Module, bad: Callable[[Expr], bool]) -> frozenset[str]:
    """Host functions in whose bodies, and in those of every function they call
    (transitively, recursion included), no expression is ``bad``."""
    cg = call_graph(m)
    fns = m.function_map
    out: set[str] = set()
    for scc in cg.sccs:  # callees first
        if all(
            not fns[name].is_kernel
            and all(c in scc or c in out or fns[c].is_kernel for c in cg.callees[name])
            and not any(bad(e) for e in walk(fns[name].body))
            for name in scc
        ):
            out.update(scc)
    return frozenset(out)
