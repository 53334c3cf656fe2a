"""Taint analyses: model-parameter taint (MPTA), instance taint, tensor-dependent control.

**Model-parameter taint** (docs/paper.md §1). An abstract value is ``None`` (not a
weight), a weight name, or a tuple of abstract values (weights passed inside a tuple).
Analysis is context-sensitive: a function is analysed once per distinct *context* — the
tuple of abstract values of its parameters at a call site — starting from the entry with
no weights. Contexts are found by a worklist; there are finitely many (weights and arity
are finite), so it terminates. Function values only ever appear as the static function
of ``map`` (the language has no first-class closures), so their points-to sets are
singletons and need no iteration. Unlike the artifact, mutual recursion is handled:
contexts flow around any cycle of the call graph.

**Taint classes** for the explorer and the compiler, per variable, ordered
``parameter < instance < tensor-dependent``: *parameter* values depend only on weights
and constants; *instance* values on per-instance inputs; *tensor-dependent* values are
host values read from tensors (``item``/``argmax``) or derived from them. Classes are
joined over call sites and iterated to a fixed point (a finite lattice, monotone joins).

Control counts as well as data (implicit flow) where it picks a value: when two or more
calls of one kind (a function's calls to itself; calls from other functions) may pass a
parameter different values, it joins the classes of the branch conditions each call sits
under (and, for calls from other functions, the conditions their caller was called under). StackRNN's ``parse(..., depth + 1)``
and ``parse(..., depth - 1)`` sit under the instance's tokens and the ``item`` decision, so
``depth``, built from constants only, is tensor-dependent: the stack size follows the parse.
A loop counter passed as ``n - 1`` by a function's single call to itself stays a parameter:
its k-th value is the same in every instance, only how many steps run differs. A tensor
parameter gets at most ``instance`` from control (which tensor arrives varies per instance,
but the host needs no tensor's value to pass it).

Branches whose condition is tensor-dependent by data (a host value read from a tensor in
that function or passed into it) need fibers at run time; control-only classes do not change
which functions are fibers: a branch on ``depth`` waits for no kernel, the read that decided
it already happened.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acrobat.analysis.callgraph import call_graph
from acrobat.ir.nodes import (
    Const,
    Expr,
    FnCall,
    Function,
    GlobalRef,
    If,
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    ParamRef,
    Phase,
    Proj,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import REGISTRY
from acrobat.ir.traversal import children, pattern_vars, walk
from acrobat.ir.types import TensorType

AbsVal = Any  # None | str | tuple[AbsVal, ...]
Context = tuple  # one AbsVal per function parameter


def has_weight(a: AbsVal) -> bool:
    if isinstance(a, str):
        return True
    return isinstance(a, tuple) and any(has_weight(x) for x in a)


def all_weights(a: AbsVal) -> bool:
    if isinstance(a, str):
        return True
    return isinstance(a, tuple) and all(all_weights(x) for x in a)


def weights_in(a: AbsVal) -> list[str]:
    if isinstance(a, str):
        return [a]
    if isinstance(a, tuple):
        return [w for x in a for w in weights_in(x)]
    return []


class AbstractEval:
    """Evaluates weight abstract values over a function body for one context."""

    def __init__(self, fn: Function, ctx: Context):
        self.env: dict[str, AbsVal] = {p.name: a for p, a in zip(fn.params, ctx)}

    def value(self, e: Expr) -> AbsVal:
        t = type(e)
        if t is ParamRef:
            return e.name
        if t is Var:
            return self.env.get(e.name)
        if t is TupleExpr:
            fields = tuple(self.value(f) for f in e.fields)
            return fields if has_weight(fields) else None
        if t is Proj:
            tup = self.value(e.tup)
            return tup[e.index] if isinstance(tup, tuple) else None
        if t is Let:
            for b in e.bindings:
                self.env[b.var.name] = self.value(b.value)
            return self.value(e.body)
        if t is If:
            a, b = self.value(e.then), self.value(e.orelse)
            return a if a == b else None
        if t is Match:
            outs = [self.value(c.body) for c in e.clauses]
            return outs[0] if all(o == outs[0] for o in outs) else None
        return None


@dataclass(frozen=True)
class MptaResult:
    """Every (function, context) reached from the entry, in discovery order."""

    contexts: dict[str, list[Context]]

    def specialized(self) -> dict[str, int]:
        """Functions analysed in more than one weight context, with the count."""
        return {f: len(cs) for f, cs in self.contexts.items() if len(cs) > 1}


def call_sites(body: Expr):
    """(callee, args) of every function call in a body, with map's element as None."""
    for e in walk(body):
        if isinstance(e, FnCall):
            yield e, e.fn, e.args
        elif isinstance(e, Map):
            yield e, e.fn, (None, *e.extra)


def model_parameter_taint(m: Module) -> MptaResult:
    """Contexts of every reachable function (worklist from the entry)."""
    contexts: dict[str, list[Context]] = {m.entry: [tuple(None for _ in m.main.params)]}
    work = [(m.entry, contexts[m.entry][0])]
    while work:
        name, ctx = work.pop(0)
        fn = m.function_map[name]
        ev = AbstractEval(fn, ctx)
        ev.value(fn.body)  # fills the environment (bindings are unique per function)
        for _, callee, args in call_sites(fn.body):
            if m.function_map[callee].is_kernel:
                continue
            cctx = tuple(None if a is None else ev.value(a) for a in args)
            known = contexts.setdefault(callee, [])
            if cctx not in known:
                known.append(cctx)
                work.append((callee, cctx))
    return MptaResult(contexts)


PARAMETER, INSTANCE, TENSOR_DEPENDENT = "parameter", "instance", "tensor-dependent"
_RANK = {PARAMETER: 0, INSTANCE: 1, TENSOR_DEPENDENT: 2}


def join(*classes: str) -> str:
    return max(classes, key=_RANK.__getitem__, default=PARAMETER)


@dataclass
class TaintResult:
    """Taint class of every variable, per function, and where control needs tensors."""

    classes: dict[str, dict[str, str]] = field(default_factory=dict)
    returns: dict[str, str] = field(default_factory=dict)
    tensor_dependent_branches: list[tuple[str, str]] = field(default_factory=list)
    fiber_functions: frozenset[str] = frozenset()

    def of(self, fn: str, var: str) -> str:
        return self.classes[fn][var]


def taint(m: Module) -> TaintResult:
    """Instance and tensor-dependent taint of every variable (fixed point over calls), by
    data and control; fibers and tensor-dependent branches by data (module docstring)."""
    result = TaintResult()
    result.classes, result.returns = _classes(m, implicit=True)
    by_data, returns_by_data = _classes(m, implicit=False)
    _control(m, result, by_data, returns_by_data)
    return result


def taint_classes(m: Module) -> dict[str, dict[str, str]]:
    """Only the classes of :func:`taint` (every function's variables), without the fibers:
    what the compile trace records for each stage of the pipeline."""
    return _classes(m, implicit=True)[0]


def _classes(m: Module, implicit: bool) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Every function's variable classes and return class; ``implicit`` adds control flow."""
    params = {f.name: [PARAMETER] * len(f.params) for f in m.functions}
    params[m.entry] = [INSTANCE] * len(m.main.params)
    returns = {f.name: PARAMETER for f in m.functions}
    called_under = {f.name: PARAMETER for f in m.functions}  # the controls it is called under
    chosen = _chosen_by_control(m) if implicit else set()
    tensor = {(f.name, i) for f in m.functions for i, p in enumerate(f.params) if _is_tensor(p.ty)}
    classes: dict[str, dict[str, str]] = {}
    # A worklist: a function is classified again only when its parameters, the controls it
    # is called under or a callee's return grew. Every step is monotone on a finite lattice,
    # so this reaches the fixed point that classifying every function until nothing changed
    # reached, without its rounds: a call chain of n functions took n rounds of n functions.
    callers = _callers(m)
    work = deque(f.name for f in m.functions)
    queued = set(work)
    while work:
        f = m.function_map[work.popleft()]
        queued.discard(f.name)
        wake: set[str] = set()
        env = dict(zip((p.name for p in f.params), params[f.name]))
        ret = _Classify(env, returns).value(f.body)
        classes[f.name] = env
        if join(ret, returns[f.name]) != returns[f.name]:
            returns[f.name] = join(ret, returns[f.name])
            wake |= callers.get(f.name, set())
        for callee, args, local in _argument_classes(f.body, env, returns):
            recursive = callee == f.name
            control = local if recursive else join(local, called_under[f.name])
            new = list(params[callee])
            for i, (_arg, cls) in enumerate(args[: len(new)]):
                flow = PARAMETER
                if (callee, i, recursive) in chosen:
                    flow = control
                    if (callee, i) in tensor:
                        flow = min(flow, INSTANCE, key=_RANK.__getitem__)
                new[i] = join(new[i], cls, flow)
            if new != params[callee]:
                params[callee] = new
                wake.add(callee)
            if implicit and join(called_under[callee], control) != called_under[callee]:
                called_under[callee] = join(called_under[callee], control)
                wake.add(callee)
        work.extend(sorted(wake - queued))
        queued |= wake
    return classes, returns


def _callers(m: Module) -> dict[str, set[str]]:
    """Who calls (or maps) each function or kernel: those whose classes read its return."""
    callers: dict[str, set[str]] = {}
    for f in m.functions:
        for e in walk(f.body):
            if isinstance(e, (FnCall, Map)):
                callers.setdefault(e.fn, set()).add(f.name)
            elif isinstance(e, KernelCall):
                callers.setdefault(e.kernel, set()).add(f.name)
    return callers


def _is_tensor(ty) -> bool:
    return isinstance(ty, TensorType)


def _chosen_by_control(m: Module) -> set[tuple[str, int, bool]]:
    """(callee, position, recursive) where control flow picks the value: two or more call
    sites of that kind that may pass different values. A function's calls to itself are one
    kind (the choice among them is made in its own body: StackRNN's ``depth + 1`` or
    ``depth - 1``); calls from other functions the other (a single call to itself, as a loop
    counter's ``n - 1``, is no choice: the k-th call gets the same value in every instance).
    Passing a parameter on unchanged is one value; every site passing the same constant or
    weight is no choice."""
    keys: dict[tuple[str, int, bool], list] = {}
    for f in m.functions:
        for e in walk(f.body):
            if isinstance(e, (FnCall, KernelCall)):
                callee, args = (e.fn if isinstance(e, FnCall) else e.kernel), e.args
            elif isinstance(e, Map):
                callee, args = e.fn, (None, *e.extra)
            else:
                continue
            recursive = callee == f.name
            for i, a in enumerate(args):
                passed_on = recursive and isinstance(a, Var) and i < len(f.params)
                key = "passed on" if passed_on and a.name == f.params[i].name else _static_key(a)
                keys.setdefault((callee, i, recursive), []).append(key)
    return {
        site for site, ks in keys.items() if len(ks) > 1 and (len(set(ks)) > 1 or ks[0] is None)
    }


def _static_key(e: Expr | None):
    """A key equal for two expressions with the same value in every run, or None."""
    if isinstance(e, Const):
        return ("const", type(e.value).__name__, repr(e.value))
    if isinstance(e, ParamRef):
        return ("weight", e.name)
    return None


class _Classify:
    """One pass over a function body computing the class of each binding into ``env``."""

    def __init__(self, env: dict[str, str], returns: dict[str, str]):
        self.env, self.returns = env, returns

    def value(self, e: Expr) -> str:
        t = type(e)
        if t is Var:
            return self.env.get(e.name, PARAMETER)
        if t in (Const, ParamRef, GlobalRef, Phase):
            return PARAMETER
        if t is Let:
            for b in e.bindings:
                self.env[b.var.name] = self.value(b.value)
            return self.value(e.body)
        if t is OpCall:
            c = join(*(self.value(a) for a in e.args))
            if REGISTRY[e.op].reads_tensor_to_host and c != PARAMETER:
                return TENSOR_DEPENDENT
            return c
        if t is If:
            return join(self.value(e.cond), self.value(e.then), self.value(e.orelse))
        if t is Match:
            c = self.value(e.scrutinee)
            outs = []
            for cl in e.clauses:
                for v in pattern_vars(cl.pattern):
                    self.env[v.name] = c
                outs.append(self.value(cl.body))
            return join(c, *outs)
        parts = [self.value(c) for c in children(e)]
        if t in (FnCall, KernelCall, Map):
            parts.append(self.returns.get(e.fn if t is not KernelCall else e.kernel, PARAMETER))
        return join(*parts)


def _argument_classes(body: Expr, env: dict[str, str], returns: dict[str, str]):
    """(callee, (argument, its class) per argument, class of the branch conditions the call
    sits under in ``body``) for every call in ``body``; map's element argument is None."""
    cls = _Classify(dict(env), returns).value
    for e, control in _under_control(body, cls, PARAMETER):
        if isinstance(e, FnCall):
            yield e.fn, [(a, cls(a)) for a in e.args], control
        elif isinstance(e, KernelCall):  # so the values inside kernels are classified too
            yield e.kernel, [(a, cls(a)) for a in e.args], control
        elif isinstance(e, Map):
            yield e.fn, [(None, cls(e.xs))] + [(a, cls(a)) for a in e.extra], control


def _under_control(e: Expr, cls, control: str):
    """Every sub-expression of ``e`` with the join of the conditions it is evaluated under."""
    yield e, control
    if isinstance(e, If):
        yield from _under_control(e.cond, cls, control)
        inner = join(control, cls(e.cond))
        yield from _under_control(e.then, cls, inner)
        yield from _under_control(e.orelse, cls, inner)
    elif isinstance(e, Match):
        yield from _under_control(e.scrutinee, cls, control)
        inner = join(control, cls(e.scrutinee))
        for clause in e.clauses:
            yield from _under_control(clause.body, cls, inner)
    else:
        for child in children(e):
            yield from _under_control(child, cls, control)


def _control(
    m: Module, result: TaintResult, by_data: dict[str, dict[str, str]], returns: dict[str, str]
) -> None:
    """Branches on conditions tensor-dependent by data, and the functions that reach them."""
    direct = set()
    for f in m.functions:
        env = by_data[f.name]
        for e in walk(f.body):
            cond = e.cond if isinstance(e, If) else e.scrutinee if isinstance(e, Match) else None
            if cond is not None and _Classify(env, returns).value(cond) == TENSOR_DEPENDENT:
                what = cond.name if isinstance(cond, Var) else type(cond).__name__
                result.tensor_dependent_branches.append((f.name, what))
                direct.add(f.name)
            if isinstance(e, OpCall) and REGISTRY[e.op].reads_tensor_to_host:
                direct.add(f.name)
    # a function needs a fiber if it reads tensors or calls one that does
    cg = call_graph(m)
    fibers = set(direct)
    changed = True
    while changed:
        changed = False
        for f, cs in cg.callees.items():
            if f not in fibers and any(c in fibers for c in cs):
                fibers.add(f)
                changed = True
    result.fiber_functions = frozenset(fibers)
