"""Static depths for hoisting (docs/paper.md §5), by abstract interpretation.

Every value gets an abstract *depth*: the DFG level after which it is available, or
TOP (``None``) when it depends on recursion and so has no fixed level. Inputs, weights
and constants are at 0; a *step* (a tensor op before fusion, a kernel call after) runs
at the max depth of its operands and its results are one level later; tuples keep a
depth per field, ADT values the max over their contents; a host value read from a
tensor is available with that tensor. ``phase()`` makes every live value available
(depth 0) in the next phase. Function parameters join their call sites'
arguments (context-insensitive), function results are summaries, and everything is
iterated to a fixed point.

Termination, without a fixed cap: with every recursive call contributing nothing,
the longest chain of steps ``L`` through the program is finite (computed on the SCC
DAG of the call graph). A depth above ``L`` can only be produced by going around a
recursion cycle, so it is widened to TOP. Depths only grow (all joins are max), over
the lattice ``{0, ..., L, TOP}`` of height ``L + 2``, so the iteration terminates.

Height ``L + 2`` can be huge: on a doubling chain ``f_i(x) = f_{i-1}(f_{i-1}(x))`` ``L`` is
``2**n``, and ``f_0``'s parameter, joined with its own result through ``f_1``'s second call,
climbs one level per round towards it (16 functions took 200,000 evaluations). So widening is
also delayed (Cousot's widening after ``k`` steps): a function's parameters or result that
grew in more than ``GROWTH_LIMIT`` evaluations jump to TOP in the fields that grow again. TOP
is always a safe answer (the step stays dynamic); a value with no cycle behind it grows once
per change of what it reads, far fewer times (no depth of any model, nor of 300 generated
programs, changed when this was introduced).

A step whose run depth is an int can be *hoisted*: every execution of it, in every
instance, has its operands ready by that level, so all of them batch in that bucket
(leaf embeddings of every tree, the input projections of an RNN). Dynamic code then
starts after the deepest hoisted level.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from acrobat.analysis.callgraph import call_graph, functions_free_of
from acrobat.ir.nodes import (
    Const,
    CtorCall,
    Expr,
    FnCall,
    GlobalRef,
    If,
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    ParamRef,
    Phase,
    Proj,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import REGISTRY
from acrobat.ir.traversal import pattern_vars, walk
from acrobat.ir.types import TupleType

TOP = None
GROWTH_LIMIT = 32
"""Evaluations in which one function's parameters (or its result) may grow before the
fields growing again are widened to TOP (module doc)."""


def join(a, b):
    """Least upper bound of two abstract depths."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return tuple(join(x, y) for x, y in zip(a, b))
    a, b = flat(a), flat(b)  # a tuple against a whole value (a host op's, xs[k])
    if a is TOP or b is TOP:
        return TOP
    return max(a, b)


def meet(a, b):
    """Greatest lower bound of two abstract depths (both upper bounds of one value)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return tuple(meet(x, y) for x, y in zip(a, b))
    if isinstance(a, tuple):
        return tuple(meet(x, b) for x in a)
    if isinstance(b, tuple):
        return tuple(meet(a, y) for y in b)
    if a is TOP:
        return b
    if b is TOP:
        return a
    return min(a, b)


def flat(a):
    """The depth of a whole value (max over a tuple's fields)."""
    if isinstance(a, tuple):
        out = 0
        for x in a:
            d = flat(x)
            if d is TOP:
                return TOP
            out = max(out, d)
        return out
    return a


def is_tensor_step(e: Expr, m: Module) -> bool:
    """Op-level steps: tensor ops other than host reads."""
    return isinstance(e, OpCall) and REGISTRY[e.op].kind.in_kernel


def is_kernel_step(e: Expr, m: Module) -> bool:
    """Kernel-level steps: kernel calls."""
    return isinstance(e, KernelCall)


@dataclass(frozen=True)
class DepthResult:
    """Run depth of every step site ``(function, variable)``; TOP is ``None``."""

    sites: dict[tuple[str, str], int | None]
    cap: int
    evaluations: int = 0  # function bodies interpreted to reach the fixed point

    @property
    def static_sites(self) -> dict[tuple[str, str], int]:
        return {k: v for k, v in self.sites.items() if v is not None}

    @property
    def max_static(self) -> int:
        return max(self.static_sites.values(), default=-1)


def longest_chain(m: Module, step: Callable[[Expr, Module], bool]) -> int:
    """Longest chain of steps with recursive calls counted as zero (see module doc)."""
    cg = call_graph(m)
    chain: dict[str, int] = {}
    for scc in cg.sccs:  # callees first
        for name in scc:
            total = 0
            for e in walk(m.function_map[name].body):
                if step(e, m):
                    total += 1
                callee = e.fn if isinstance(e, (FnCall, Map)) else None
                if callee is not None and callee not in scc:
                    total += chain.get(callee, 0)
            chain[name] = total
    return max(chain.values(), default=0) + 1


def step_free(m: Module, step: Callable[[Expr, Module], bool]) -> frozenset[str]:
    """Host functions that, with everything they call, contain no step and no ``phase()``
    (a recursive ``reverse`` or ``append`` building a list): what one returns is made of
    its arguments and constants, so it is available once its arguments are."""
    return functions_free_of(m, lambda e: step(e, m) or isinstance(e, (Phase, KernelCall)))


def static_depths(m: Module, step: Callable[[Expr, Module], bool] = is_kernel_step) -> DepthResult:
    """Run the abstract interpretation to its fixed point."""
    cap = longest_chain(m, step)
    free = step_free(m, step)
    params = {
        f.name: [0 if f.name == m.entry else _bottom(p.ty) for p in f.params] for f in m.functions
    }
    returns: dict[str, object] = {f.name: _bottom(f.ret) for f in m.functions}
    sites: dict[tuple[str, str], object] = {}
    # A worklist, callees first (the call graph's components in reverse topological
    # order, then module order): a function is evaluated again only when a return it read
    # or its own parameters grew. The lattice is finite (0..cap, TOP) and every step is
    # monotone, so this reaches the same least fixed point as evaluating every function
    # until nothing changes, which it replaced: a recursive function climbing towards
    # ``cap`` one level per round made every other function follow it, round after round
    # (90-110 rounds of 18 functions on generated programs).
    order = {f.name: i for i, f in enumerate(m.functions)}
    rank = {name: r for r, scc in enumerate(call_graph(m).sccs) for name in scc}
    callers: dict[str, set[str]] = {}  # who read each function's return so far
    growths: dict[tuple, int] = {}  # (function, "params" | "return", field...) -> count
    evaluations = 0
    heap = [(rank.get(f.name, -1), order[f.name], f.name) for f in m.functions if not f.is_kernel]
    heapq.heapify(heap)
    queued = {name for _, _, name in heap}
    while heap:
        _, _, name = heapq.heappop(heap)
        queued.discard(name)
        f = m.function_map[name]
        interp = _Interp(m, name, cap, step, params, returns, sites, free)
        evaluations += 1
        env = {p.name: d for p, d in zip(f.params, params[name])}
        ret = interp.value(f.body, env)
        for callee in interp.called:
            callers.setdefault(callee, set()).add(name)
        for callee, before in interp.grown.items():
            params[callee] = _grow(before, params[callee], growths, (callee, "params"))
        again = set(interp.grown)  # callees whose parameters grew
        new = _grow(returns[name], _widen(join(returns[name], ret), cap), growths, (name, "return"))
        if new != returns[name]:
            returns[name] = new
            again |= callers.get(name, set())
        for g in again:
            if g not in queued:
                queued.add(g)
                heapq.heappush(heap, (rank.get(g, -1), order[g], g))
    return DepthResult({k: flat(v) for k, v in sites.items()}, cap, evaluations)


def _grow(old, new, growths: dict, key: tuple):
    """``new`` (``old`` or above it), with TOP in each field that has now grown in more
    than ``GROWTH_LIMIT`` evaluations (delayed widening); ``key`` names the value."""
    if type(old) is type(new) and isinstance(old, (list, tuple)):
        return type(old)(_grow(o, n, growths, (*key, i)) for i, (o, n) in enumerate(zip(old, new)))
    if new == old:
        return new
    count = growths[key] = growths.get(key, 0) + 1
    return new if count <= GROWTH_LIMIT else TOP


def _bottom(ty):
    if isinstance(ty, TupleType):
        return tuple(_bottom(t) for t in ty.fields)
    return 0


def _widen(a, cap):
    if isinstance(a, tuple):
        return tuple(_widen(x, cap) for x in a)
    return TOP if a is TOP or a > cap else a


class _Interp:
    def __init__(self, m, fn, cap, step, params, returns, sites, free=frozenset()):
        self.m, self.fn, self.cap, self.step = m, fn, cap, step
        self.params, self.returns, self.sites = params, returns, sites
        self.free = free  # step-free functions (step_free)
        self.called: set[str] = set()  # functions whose return this evaluation read
        self.grown: dict[str, list] = {}  # functions whose parameters it made grow: from what

    def call(self, callee: str, args: list) -> object:
        old = self.params[callee]
        new = [_widen(join(o, a), self.cap) for o, a in zip(old, args)]
        if new != old:
            self.params[callee] = new
            self.grown.setdefault(callee, old)
        self.called.add(callee)
        ret = self.returns[callee]
        if callee in self.free:
            # the summary joins every call site; this call's own arguments bound its
            # result too (it is made of them), so the tighter of the two holds here
            ret = meet(ret, _like(self.m.function_map[callee].ret, flat(tuple(args))))
        return ret

    def value(self, e: Expr, env: dict) -> object:
        t = type(e)
        if t is Var:
            return env.get(e.name, 0)
        if t in (Const, ParamRef, GlobalRef, Phase):
            return 0
        if t is Let:
            for b in e.bindings:
                if isinstance(b.value, Phase):
                    for k in env:
                        env[k] = _reset(env[k])
                d = self.value(b.value, env)
                if self.step(b.value, self.m):
                    run = flat(tuple(self.value(a, env) for a in b.value.args))
                    key = (self.fn, b.var.name)
                    old = self.sites.get(key, 0)
                    new = TOP if run is TOP or old is TOP else max(old, run)
                    self.sites[key] = new
                env[b.var.name] = d
            return self.value(e.body, env)
        if self.step(e, self.m):
            run = flat(tuple(self.value(a, env) for a in e.args))
            out = TOP if run is TOP else _widen(run + 1, self.cap)
            return _like(e.ty, out)
        if t is OpCall:  # a host op: xs[k] may be a tuple, as deep as the list
            return _like(e.ty, flat(tuple(self.value(a, env) for a in e.args)))
        if t is KernelCall or t is FnCall:
            args = [self.value(a, env) for a in e.args]
            if t is KernelCall:
                run = flat(tuple(args))
                return _like(e.ty, TOP if run is TOP else _widen(run + 1, self.cap))
            return self.call(e.fn, args)
        if t is TupleExpr:
            return tuple(self.value(x, env) for x in e.fields)
        if t is Proj:
            tup = self.value(e.tup, env)
            return tup[e.index] if isinstance(tup, tuple) else tup
        if t is CtorCall:
            return flat(tuple(self.value(a, env) for a in e.args))
        if t is Parallel:
            return tuple(self.value(c, env) for c in e.calls)
        if t is Map:
            xs = flat(self.value(e.xs, env))
            extra = [self.value(a, env) for a in e.extra]
            return flat(self.call(e.fn, [xs, *extra]))
        if t is If:
            self.value(e.cond, env)
            return join(self.value(e.then, env), self.value(e.orelse, env))
        if t is Match:
            d = flat(self.value(e.scrutinee, env))
            results = []
            for c in e.clauses:
                for v in pattern_vars(c.pattern):
                    env[v.name] = _like(v.ty, d)
                results.append(self.value(c.body, env))
            out = results[0]
            for r in results[1:]:
                out = join(out, r)
            return out
        return 0


def _like(ty, d):
    """An abstract depth shaped like values of ``ty`` (per tuple field)."""
    if isinstance(ty, TupleType):
        return tuple(_like(t, d) for t in ty.fields)
    return d


def _reset(a):
    return tuple(_reset(x) for x in a) if isinstance(a, tuple) else 0
