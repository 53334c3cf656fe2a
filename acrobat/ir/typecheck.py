"""Type and shape inference for IR modules.

``infer_module(m)`` returns ``m`` with every ``ty`` field filled in. The frontend, the
text parser and the verifier all use it, so there is exactly one set of typing rules.

Generic ADT constructors (``Nil()``, ``Cons(x, xs)``) get fresh type variables that are
solved by unification within the function; anything left unsolved is an error asking
for an annotation. Tensor shapes are concrete, so op shape rules run directly.
"""

from __future__ import annotations

import dataclasses
import itertools

from acrobat.errors import (
    AcrobatError,
    AcrobatMatchError,
    AcrobatNameError,
    AcrobatShapeError,
    AcrobatTypeError,
)
from acrobat.ir.nodes import (
    Binding,
    Clause,
    Const,
    CtorCall,
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
    Parallel,
    ParamRef,
    Pattern,
    PCtor,
    Phase,
    Proj,
    PVar,
    PWild,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import infer_op
from acrobat.ir.traversal import post_order_map
from acrobat.ir.types import (
    BOOL,
    FLOAT,
    INT,
    UNIT,
    AdtType,
    FuncType,
    TensorType,
    TupleType,
    Type,
    TypeParam,
    substitute,
)


@dataclasses.dataclass(frozen=True, slots=True)
class _Meta(Type):
    """An unsolved type variable (internal to inference)."""

    id: int

    def __str__(self) -> str:
        return f"?{self.id}"


def _spanned(err: AcrobatError, span) -> AcrobatError:
    """The same error, located at ``span`` if it had no location yet."""
    if err.span is not None or span is None:
        return err
    return (
        type(err)(err.message, span, err.hint)
        if type(err).__init__ is AcrobatError.__init__
        else err
    )


def check_type_wellformed(m: Module, ty: Type, params: tuple[str, ...] = (), span=None) -> None:
    """Every ADT named in ``ty`` exists with the right number of type arguments."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, AdtType):
            adt = m.adt_map.get(t.name)
            if adt is None:
                raise AcrobatNameError(f"unknown type {t.name!r}", span)
            if len(adt.type_params) != len(t.args):
                raise AcrobatTypeError(
                    f"type {t.name} takes {len(adt.type_params)} type argument(s), "
                    f"got {len(t.args)}",
                    span,
                )
            stack.extend(t.args)
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, FuncType):
            stack.extend(t.params + (t.ret,))
        elif isinstance(t, TypeParam) and t.name not in params:
            raise AcrobatNameError(f"unknown type parameter {t.name!r}", span)
        elif isinstance(t, TensorType) and any(not isinstance(d, int) or d < 1 for d in t.shape):
            raise AcrobatTypeError(f"tensor dimensions must be positive ints: {t}", span)


class FunctionInference:
    """Inference state for one function: environment and type-variable solutions."""

    def __init__(self, module: Module, fn: Function):
        self.m = module
        self.fn = fn
        self.solution: dict[int, Type] = {}
        self.counter = itertools.count()
        self.env: dict[str, Type] = {}

    # -- unification -------------------------------------------------------------
    def fresh(self) -> _Meta:
        return _Meta(next(self.counter))

    def resolve(self, t: Type) -> Type:
        while isinstance(t, _Meta) and t.id in self.solution:
            t = self.solution[t.id]
        if isinstance(t, TupleType):
            return TupleType(tuple(self.resolve(f) for f in t.fields))
        if isinstance(t, AdtType) and t.args:
            return AdtType(t.name, tuple(self.resolve(a) for a in t.args))
        if isinstance(t, FuncType):
            return FuncType(tuple(self.resolve(p) for p in t.params), self.resolve(t.ret))
        return t

    def unify(self, a: Type, b: Type, span, what: str) -> Type:
        a, b = self.resolve(a), self.resolve(b)
        if a == b:
            return a
        if isinstance(a, _Meta) or isinstance(b, _Meta):
            meta, other = (a, b) if isinstance(a, _Meta) else (b, a)
            if _occurs(meta, other):
                raise AcrobatTypeError(f"{what}: infinite type {meta} = {other}", span)
            self.solution[meta.id] = other
            return other
        if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.fields) == len(b.fields):
            fields = [self.unify(x, y, span, what) for x, y in zip(a.fields, b.fields)]
            return TupleType(tuple(fields))
        if (
            isinstance(a, AdtType)
            and isinstance(b, AdtType)
            and (a.name, len(a.args))
            == (
                b.name,
                len(b.args),
            )
        ):
            args = [self.unify(x, y, span, what) for x, y in zip(a.args, b.args)]
            return AdtType(a.name, tuple(args))
        if isinstance(a, FuncType) and isinstance(b, FuncType) and len(a.params) == len(b.params):
            params = [self.unify(x, y, span, what) for x, y in zip(a.params, b.params)]
            return FuncType(tuple(params), self.unify(a.ret, b.ret, span, what))
        both_tensors = isinstance(a, TensorType) and isinstance(b, TensorType)
        cls = AcrobatShapeError if both_tensors else AcrobatTypeError
        raise cls(f"{what}: expected {a}, got {b}", span)

    def known(self, t: Type, span, what: str) -> Type:
        t = self.resolve(t)
        if _has_meta(t):
            raise AcrobatTypeError(
                f"cannot infer the type of {what} ({t})",
                span,
                hint="annotate the variable, e.g. `xs: List[Tensor[H]] = Nil()`",
            )
        return t

    # -- expressions -------------------------------------------------------------
    def infer(self, e: Expr) -> Expr:
        try:
            return getattr(self, "_" + type(e).__name__)(e)
        except AcrobatError as err:
            raise _spanned(err, getattr(e, "span", None)) from None

    def _typed(self, e: Expr, ty: Type) -> Expr:
        return dataclasses.replace(e, ty=ty)

    def _Var(self, e: Var) -> Expr:
        if e.name not in self.env:
            raise AcrobatNameError(f"undefined variable {e.name!r}", e.span)
        t = self.env[e.name]
        if e.ty is not None:
            t = self.unify(e.ty, t, e.span, f"variable {e.name}")
        return self._typed(e, t)

    def _Const(self, e: Const) -> Expr:
        if e.ty is not None:
            return e
        v = e.value
        return self._typed(e, BOOL if isinstance(v, bool) else INT if isinstance(v, int) else FLOAT)

    def _ParamRef(self, e: ParamRef) -> Expr:
        p = self.m.param_map.get(e.name)
        if p is None:
            raise AcrobatNameError(f"undefined parameter {e.name!r}", e.span)
        return self._typed(e, p.ty)

    def _GlobalRef(self, e: GlobalRef) -> Expr:
        f = self.m.function_map.get(e.name)
        if f is None:
            raise AcrobatNameError(f"undefined function {e.name!r}", e.span)
        return self._typed(e, f.type)

    def _OpCall(self, e: OpCall) -> Expr:
        if list(e.attrs) != sorted(e.attrs, key=lambda kv: kv[0]):
            raise AcrobatTypeError(f"{e.op}: attributes must be sorted by name", e.span)
        args = tuple(self.infer(a) for a in e.args)
        tys = [
            self.known(a.ty, a.span or e.span, f"argument {i + 1} of {e.op}")
            for i, a in enumerate(args)
        ]
        args = tuple(dataclasses.replace(a, ty=t) for a, t in zip(args, tys))
        return dataclasses.replace(e, args=args, ty=infer_op(e.op, tys, dict(e.attrs)))

    def _FnCall(self, e: FnCall) -> Expr:
        f = self.m.function_map.get(e.fn)
        if f is None:
            raise AcrobatNameError(f"call to undefined function {e.fn!r}", e.span)
        if len(e.args) != len(f.params):
            raise AcrobatTypeError(
                f"{e.fn} takes {len(f.params)} argument(s), got {len(e.args)}", e.span
            )
        args = tuple(self.infer(a) for a in e.args)
        for i, (a, p) in enumerate(zip(args, f.params)):
            self.unify(p.ty, a.ty, a.span or e.span, f"argument {i + 1} ({p.name}) of {e.fn}")
        return dataclasses.replace(e, args=args, ty=f.ret)

    def _KernelCall(self, e: KernelCall) -> Expr:
        f = self.m.function_map.get(e.kernel)
        if f is None or not f.is_kernel:
            raise AcrobatNameError(f"call to undefined kernel {e.kernel!r}", e.span)
        if e.depth is not None and (not isinstance(e.depth, int) or e.depth < 0):
            raise AcrobatTypeError(f"static depth must be an int >= 0, got {e.depth!r}", e.span)
        call = self._FnCall(FnCall(e.kernel, e.args, span=e.span))
        return dataclasses.replace(e, args=call.args, ty=call.ty)

    def _CtorCall(self, e: CtorCall) -> Expr:
        if e.ctor not in self.m.ctor_map:
            raise AcrobatNameError(f"unknown constructor {e.ctor!r}", e.span)
        adt, tag = self.m.ctor_map[e.ctor]
        fields = adt.ctors[tag].fields
        if len(e.args) != len(fields):
            raise AcrobatTypeError(
                f"constructor {e.ctor} takes {len(fields)} field(s), got {len(e.args)}", e.span
            )
        metas = {p: self.fresh() for p in adt.type_params}
        args = tuple(self.infer(a) for a in e.args)
        for i, (a, ft) in enumerate(zip(args, fields)):
            self.unify(substitute(ft, metas), a.ty, a.span or e.span, f"field {i + 1} of {e.ctor}")
        ty = AdtType(adt.name, tuple(metas[p] for p in adt.type_params))
        if e.ty is not None:
            ty = self.unify(e.ty, ty, e.span, f"constructor {e.ctor}")
        return dataclasses.replace(e, args=args, ty=ty)

    def _TupleExpr(self, e: TupleExpr) -> Expr:
        fields = tuple(self.infer(f) for f in e.fields)
        return dataclasses.replace(e, fields=fields, ty=TupleType(tuple(f.ty for f in fields)))

    def _Proj(self, e: Proj) -> Expr:
        tup = self.infer(e.tup)
        t = self.known(tup.ty, e.span, "a projected value")
        if not isinstance(t, TupleType):
            raise AcrobatTypeError(f"indexing [{e.index}] needs a tuple, got {t}", e.span)
        if not 0 <= e.index < len(t.fields):
            raise AcrobatTypeError(f"index {e.index} is out of range for {t}", e.span)
        return dataclasses.replace(e, tup=tup, ty=t.fields[e.index])

    def bind(self, v: Var, t: Type) -> Var:
        if v.name in self.env:
            raise AcrobatNameError(f"variable {v.name!r} is bound twice in {self.fn.name}", v.span)
        if v.ty is not None:
            t = self.unify(v.ty, t, v.span, f"variable {v.name}")
        self.env[v.name] = t
        return dataclasses.replace(v, ty=t)

    def _Let(self, e: Let) -> Expr:
        out = []
        for b in e.bindings:
            value = self.infer(b.value)
            out.append(Binding(self.bind(b.var, value.ty), value))
        body = self.infer(e.body)
        return dataclasses.replace(e, bindings=tuple(out), body=body, ty=body.ty)

    def _If(self, e: If) -> Expr:
        cond = self.infer(e.cond)
        self.unify(BOOL, cond.ty, cond.span or e.span, "if condition (a host bool)")
        then, orelse = self.infer(e.then), self.infer(e.orelse)
        ty = self.unify(then.ty, orelse.ty, e.span, "the two branches of if")
        return dataclasses.replace(e, cond=cond, then=then, orelse=orelse, ty=ty)

    def _Match(self, e: Match) -> Expr:
        scrut = self.infer(e.scrutinee)
        st = self.known(scrut.ty, e.span, "the matched value")
        if not isinstance(st, AdtType):
            raise AcrobatMatchError(f"match needs an ADT value, got {st}", e.span)
        clauses, ty = [], None
        for c in e.clauses:
            pat = self.pattern(c.pattern, st, c.span or e.span)
            body = self.infer(c.body)
            ty = body.ty if ty is None else self.unify(ty, body.ty, c.span, "the cases of match")
            clauses.append(Clause(pat, body, span=c.span))
        missing = missing_case(self.m, st, [c.pattern for c in e.clauses])
        if missing is not None:
            raise AcrobatMatchError(
                f"match on {st} is not exhaustive: {missing} is not covered",
                e.span,
                hint=f"add `case {missing}:` or a final `case _:`",
            )
        return dataclasses.replace(e, scrutinee=scrut, clauses=tuple(clauses), ty=ty)

    def pattern(self, p: Pattern, t: Type, span) -> Pattern:
        if isinstance(p, PWild):
            return p
        if isinstance(p, PVar):
            return PVar(self.bind(p.var, t))
        if p.ctor not in self.m.ctor_map:
            raise AcrobatNameError(f"unknown constructor {p.ctor!r} in pattern", span)
        adt, tag = self.m.ctor_map[p.ctor]
        t = self.resolve(t)
        if not isinstance(t, AdtType) or t.name != adt.name:
            raise AcrobatMatchError(f"pattern {p.ctor}(...) cannot match a value of type {t}", span)
        fields = adt.ctors[tag].fields
        if len(p.fields) != len(fields):
            raise AcrobatMatchError(
                f"pattern {p.ctor} needs {len(fields)} field(s), got {len(p.fields)}", span
            )
        mapping = dict(zip(adt.type_params, t.args))
        subs = tuple(
            self.pattern(q, substitute(ft, mapping), span) for q, ft in zip(p.fields, fields)
        )
        return PCtor(p.ctor, subs)

    def _Parallel(self, e: Parallel) -> Expr:
        calls = tuple(self.infer(c) for c in e.calls)
        for c in calls:
            if not isinstance(c, FnCall):
                raise AcrobatTypeError("parallel(...) takes function calls only", c.span or e.span)
        return dataclasses.replace(e, calls=calls, ty=TupleType(tuple(c.ty for c in calls)))

    def _Map(self, e: Map) -> Expr:
        f = self.m.function_map.get(e.fn)
        if f is None:
            raise AcrobatNameError(f"map of undefined function {e.fn!r}", e.span)
        if "List" not in self.m.adt_map:
            raise AcrobatNameError("map needs the List type", e.span)
        if len(f.params) != 1 + len(e.extra):
            raise AcrobatTypeError(
                f"map({e.fn}, xs, ...) passes {1 + len(e.extra)} argument(s) but {e.fn} takes "
                f"{len(f.params)}",
                e.span,
            )
        xs = self.infer(e.xs)
        self.unify(AdtType("List", (f.params[0].ty,)), xs.ty, e.span, f"the list mapped by {e.fn}")
        extra = tuple(self.infer(a) for a in e.extra)
        for a, p in zip(extra, f.params[1:]):
            self.unify(p.ty, a.ty, a.span or e.span, f"argument {p.name} of {e.fn}")
        return dataclasses.replace(e, xs=xs, extra=extra, ty=AdtType("List", (f.ret,)))

    def _Phase(self, e: Phase) -> Expr:
        return self._typed(e, UNIT)

    # -- function ----------------------------------------------------------------
    def run(self) -> Function:
        fn = self.fn
        for p in fn.params:
            if p.ty is None:
                raise AcrobatTypeError(f"parameter {p.name} of {fn.name} has no type", p.span)
            self.bind(p, p.ty)
        body = self.infer(fn.body)
        self.unify(fn.ret, body.ty, fn.span, f"the result of {fn.name}")
        body = post_order_map(body, self._zonk)
        return dataclasses.replace(fn, body=body)

    def _zonk(self, e: Expr) -> Expr:
        e = self._zonk_bound(e)
        if getattr(e, "ty", None) is None:
            return e
        return dataclasses.replace(e, ty=self.known(e.ty, e.span, _describe(e)))

    def _zonk_bound(self, e: Expr) -> Expr:
        if isinstance(e, Let):
            bs = tuple(Binding(self._zonk_var(b.var), b.value) for b in e.bindings)
            return dataclasses.replace(e, bindings=bs)
        if isinstance(e, Match):
            cl = tuple(Clause(self._zonk_pat(c.pattern), c.body, span=c.span) for c in e.clauses)
            return dataclasses.replace(e, clauses=cl)
        return e

    def _zonk_var(self, v: Var) -> Var:
        return dataclasses.replace(v, ty=self.known(v.ty, v.span, f"variable {v.name}"))

    def _zonk_pat(self, p: Pattern) -> Pattern:
        if isinstance(p, PVar):
            return PVar(self._zonk_var(p.var))
        if isinstance(p, PCtor):
            return PCtor(p.ctor, tuple(self._zonk_pat(q) for q in p.fields))
        return p


def _describe(e: Expr) -> str:
    if isinstance(e, CtorCall):
        return f"{e.ctor}(...)"
    return type(e).__name__


def _has_meta(t: Type) -> bool:
    if isinstance(t, _Meta):
        return True
    if isinstance(t, TupleType):
        return any(_has_meta(f) for f in t.fields)
    if isinstance(t, AdtType):
        return any(_has_meta(a) for a in t.args)
    if isinstance(t, FuncType):
        return any(_has_meta(a) for a in t.params + (t.ret,))
    return False


def _occurs(meta: _Meta, t: Type) -> bool:
    if t == meta:
        return True
    if isinstance(t, TupleType):
        return any(_occurs(meta, f) for f in t.fields)
    if isinstance(t, AdtType):
        return any(_occurs(meta, a) for a in t.args)
    if isinstance(t, FuncType):
        return any(_occurs(meta, a) for a in t.params + (t.ret,))
    return False


def missing_case(m: Module, ty: Type, patterns: list[Pattern]) -> str | None:
    """An example value no pattern matches (as text), or None if the match is exhaustive.

    The usefulness algorithm of pattern-matrix compilation: split the first column by
    constructor only when some row names one, so recursive types terminate.
    """
    w = _witness(m, [[p] for p in patterns], [ty])
    return None if w is None else w[0]


def _witness(m: Module, rows: list[list[Pattern]], types: list[Type]) -> list[str] | None:
    if not rows:
        return ["_"] * len(types)
    if not types:
        return None
    t0 = types[0]
    heads = [r[0].ctor for r in rows if isinstance(r[0], PCtor)]
    if isinstance(t0, AdtType) and heads:
        adt = m.adt_map[t0.name]
        mapping = dict(zip(adt.type_params, t0.args))
        if set(heads) == {c.name for c in adt.ctors}:
            for c in adt.ctors:
                n = len(c.fields)
                spec = []
                for r in rows:
                    if isinstance(r[0], PCtor):
                        if r[0].ctor == c.name:
                            spec.append(list(r[0].fields) + r[1:])
                    else:
                        spec.append([PWild()] * n + r[1:])
                ftypes = [substitute(f, mapping) for f in c.fields]
                w = _witness(m, spec, ftypes + types[1:])
                if w is not None:
                    return [_fmt(c.name, w[:n])] + w[n:]
            return None
        rest = _witness(m, [r[1:] for r in rows if not isinstance(r[0], PCtor)], types[1:])
        if rest is None:
            return None
        c = next(c for c in adt.ctors if c.name not in heads)
        return [_fmt(c.name, ["_"] * len(c.fields))] + rest
    rest = _witness(m, [r[1:] for r in rows], types[1:])
    return None if rest is None else ["_"] + rest


def _fmt(ctor: str, fields: list[str]) -> str:
    return f"{ctor}({', '.join(fields)})"


def infer_module(m: Module) -> Module:
    """``m`` with all types filled in, after checking the module-level declarations."""
    seen: dict[str, str] = {}

    def declare(name: str, kind: str, span) -> None:
        if name in seen:
            raise AcrobatNameError(f"{kind} {name!r} is already defined as a {seen[name]}", span)
        seen[name] = kind

    for p in m.params:
        declare(p.name, "parameter", p.span)
        check_type_wellformed(m, p.ty, span=p.span)
    for a in m.adts:
        declare(a.name, "type", a.span)
        for c in a.ctors:
            declare(c.name, "constructor", a.span)
            for f in c.fields:
                check_type_wellformed(m, f, a.type_params, a.span)
    for f in m.functions:
        declare(f.name, "function", f.span)
        for p in f.params:
            check_type_wellformed(m, p.ty, span=p.span or f.span)
        check_type_wellformed(m, f.ret, span=f.span)
    if m.entry not in m.function_map:
        raise AcrobatNameError(
            f"the program has no entry function {m.entry!r}",
            hint=f"define `def {m.entry}(...)`",
        )
    fns = tuple(FunctionInference(m, f).run() for f in m.functions)
    return dataclasses.replace(m, functions=fns)


__all__ = ["infer_module", "missing_case", "check_type_wellformed"]
