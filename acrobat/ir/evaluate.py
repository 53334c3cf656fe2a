"""The reference interpreter: one instance at a time, eager NumPy.

This is the oracle every batched result is compared with, so it is written to be
obviously right rather than fast. It never recurses in Python: each IR expression is
evaluated by a generator that *yields* the sub-expressions it needs, and a trampoline
drives a stack of those generators. A degenerate tree 10,000 levels deep therefore runs
with the default recursion limit.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from acrobat.errors import AcrobatError, EvaluationError
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
    Pattern,
    PCtor,
    Phase,
    Proj,
    PVar,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import REGISTRY
from acrobat.ir.types import TensorType
from acrobat.ir.values import AdtValue, check_params, entry_args

Env = dict[str, Any]


class FunctionValue:
    """A global function used as a value."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionValue) and other.name == self.name

    __hash__ = None  # type: ignore[assignment]


class Interpreter:
    """Evaluates functions of one module with fixed weights."""

    def __init__(self, module: Module, params: Mapping[str, np.ndarray]):
        self.m = module
        self.params = params

    # -- atoms: evaluated in place, never through the trampoline ------------------------
    def atom(self, e: Expr, env: Env) -> Any:
        t = type(e)
        if t is Var:
            return env[e.name]
        if t is ParamRef:
            return self.params[e.name]
        if t is Const:
            if isinstance(e.ty, TensorType):
                return np.asarray(e.value, dtype=e.ty.dtype)
            return e.value
        return FunctionValue(e.name)

    def sub(self, e: Expr, env: Env):
        """Value of a sub-expression: in place for atoms, via the trampoline otherwise."""
        if type(e) in (Var, ParamRef, Const, GlobalRef):
            return self.atom(e, env)
        return (yield self.ev(e, env))

    # -- expressions: generators that yield sub-evaluations -----------------------------
    def ev(self, e: Expr, env: Env) -> Generator[Any, Any, Any]:
        t = type(e)
        if t is Let:
            for b in e.bindings:
                env[b.var.name] = yield from self.sub(b.value, env)
            return (yield from self.sub(e.body, env))
        if t is OpCall:
            args = []
            for a in e.args:
                args.append((yield from self.sub(a, env)))
            return self.apply_op(e, args)
        if t is FnCall:
            args = []
            for a in e.args:
                args.append((yield from self.sub(a, env)))
            return (yield self.call(e.fn, args))
        if t is KernelCall:
            args = []
            for a in e.args:
                args.append((yield from self.sub(a, env)))
            return (yield self.call(e.kernel, args))
        if t is If:
            c = yield from self.sub(e.cond, env)
            return (yield from self.sub(e.then if c else e.orelse, env))
        if t is Match:
            v = yield from self.sub(e.scrutinee, env)
            for c in e.clauses:
                if match_pattern(c.pattern, v, env):
                    return (yield from self.sub(c.body, env))
            raise EvaluationError(f"no case matches {v!r}", e.span)
        if t is CtorCall:
            args = []
            for a in e.args:
                args.append((yield from self.sub(a, env)))
            return AdtValue(e.ctor, tuple(args))
        if t is TupleExpr or t is Parallel:
            out = []
            for f in e.fields if t is TupleExpr else e.calls:
                out.append((yield from self.sub(f, env)))
            return tuple(out)
        if t is Proj:
            return (yield from self.sub(e.tup, env))[e.index]
        if t is Map:
            return (yield from self.map(e, env))
        if t is Phase:
            return ()
        return self.atom(e, env)

    def map(self, e: Map, env: Env):
        xs = yield from self.sub(e.xs, env)
        extra = []
        for a in e.extra:
            extra.append((yield from self.sub(a, env)))
        results = []
        while xs.ctor == "Cons":
            results.append((yield self.call(e.fn, [xs.fields[0], *extra])))
            xs = xs.fields[1]
        out = AdtValue("Nil")
        for r in reversed(results):
            out = AdtValue("Cons", (r, out))
        return out

    def call(self, name: str, args: list[Any]):
        fn = self.m.function_map[name]
        env = {p.name: a for p, a in zip(fn.params, args)}
        return self.ev(fn.body, env)

    def apply_op(self, e: OpCall, args: list[Any]) -> Any:
        try:
            return REGISTRY[e.op].impl(*args, **dict(e.attrs))
        except AcrobatError as err:
            if err.span is None:
                raise type(err)(err.message, e.span, err.hint) from None
            raise
        except (ArithmeticError, ValueError) as err:  # the host programs' HOST_FAILURES
            raise EvaluationError(f"{e.op} failed: {err}", e.span) from None

    def run(self, name: str, args: list[Any]) -> Any:
        """Call function ``name`` on ``args`` through the trampoline."""
        stack = [self.call(name, args)]
        value = None
        while stack:
            try:
                request = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                continue
            stack.append(request)
            value = None
        return value


def match_pattern(p: Pattern, v: Any, env: Env) -> bool:
    """Bind the pattern's variables into ``env`` if ``v`` matches (patterns are shallow)."""
    if type(p) is PVar:
        env[p.var.name] = v
        return True
    if type(p) is PCtor:
        if v.ctor != p.ctor:
            return False
        return all(match_pattern(q, x, env) for q, x in zip(p.fields, v.fields))
    return True


def evaluate(module: Module, instance: Any, params: Mapping[str, np.ndarray] | None = None) -> Any:
    """Run the entry function on one instance with the reference semantics.

    ``instance`` is the entry function's argument (a tuple of arguments if it takes
    several); ``params`` maps every declared weight to an array (see ``init_params``).
    """
    if params is None:
        params = {}
    check_params(module, params)
    args = entry_args(module, instance)
    return Interpreter(module, params).run(module.entry, list(args))
