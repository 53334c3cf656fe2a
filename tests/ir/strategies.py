"""Hypothesis strategies for random, well-typed IR modules.

``modules()`` draws sizes, weights, ADTs (a binary ``Tree``, generic ``List[T]``,
``Pair[A, B]`` and ``Option[T]``, mutually recursive ``Rose``/``Forest``, a ``Shape`` with
tuple fields) and several functions whose bodies are generated type-directed: every
expression is built for a target type from op shape rules, calls, constructors, ``if``,
exhaustive ``match`` (nested constructor patterns, wildcards, catch-alls), tuples and
projections, ``parallel``, ``map``, nested ``let`` blocks and ``phase()`` at the top
level of the entry function. The result has been through ``infer_module``.

Calls keep evaluation finite: functions live in three layers; layer 0 calls only earlier
layer-0 functions, layer 1 (tree-recursive, first parameter a ``Tree``) calls layer 0 or
any layer-1 function on a strictly smaller subtree, and layer 2 (the entry last) calls
anything in layers 0/1 or earlier in layer 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hypothesis import strategies as st

from acrobat.ir.nodes import (
    AdtDef,
    Binding,
    Clause,
    Const,
    CtorCall,
    CtorDef,
    Expr,
    FnCall,
    Function,
    GlobalRef,
    If,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    ParamDef,
    ParamRef,
    PCtor,
    Phase,
    Proj,
    PVar,
    PWild,
    TupleExpr,
    Var,
)
from acrobat.ir.typecheck import infer_module
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

T, A, B = TypeParam("T"), TypeParam("A"), TypeParam("B")
TREE = AdtType("Tree")
UNARY = ("sigmoid", "tanh", "relu", "exp", "neg", "gelu")
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
COMPARE = ("h.lt", "h.le", "h.gt", "h.ge", "h.eq", "h.ne")
ARITH = ("h.add", "h.sub", "h.mul", "h.floordiv", "h.mod")
FLOATS = st.floats(allow_nan=False, width=64)


def _adts(d0: int) -> tuple[AdtDef, ...]:
    """The fixed ADT declarations (Rose refers to Forest, declared after it)."""
    ctors = {
        "Tree": ([], [("Leaf", (INT,)), ("Node", (TREE, TREE))]),
        "List": (["T"], [("Nil", ()), ("Cons", (T, AdtType("List", (T,))))]),
        "Pair": (["A", "B"], [("MkPair", (A, B))]),
        "Option": (["T"], [("NoneOf", ()), ("Some", (T,))]),
        "Shape": ([], [("Circle", (FLOAT,)), ("Rect", (TupleType((INT, BOOL)),)), ("Blank", ())]),
        "Rose": ([], [("Rose_", (TensorType((d0,)), AdtType("Forest")))]),
        "Forest": ([], [("FNil", ()), ("FCons", (AdtType("Rose"), AdtType("Forest")))]),
    }
    return tuple(
        AdtDef(name, tuple(ps), tuple(CtorDef(c, fs) for c, fs in cs))
        for name, (ps, cs) in ctors.items()
    )


# The constructor to use when no depth is left: it does not lead back to its own ADT.
LEAF_CTOR = {
    "Tree": "Leaf",
    "List": "Nil",
    "Pair": "MkPair",
    "Option": "NoneOf",
    "Shape": "Blank",
    "Rose": "Rose_",
    "Forest": "FNil",
}


@dataclass(frozen=True)
class Sig:
    """A function signature and its layer (see the module docstring)."""

    name: str
    params: tuple[Type, ...]
    ret: Type
    layer: int
    index: int

    @property
    def type(self) -> FuncType:
        return FuncType(self.params, self.ret)


@dataclass(frozen=True)
class Scope:
    """Variables in scope; ``le``/``lt``: trees no larger / strictly smaller than the
    current function's tree parameter."""

    env: tuple[tuple[str, Type], ...] = ()
    le: frozenset[str] = frozenset()
    lt: frozenset[str] = frozenset()

    def bind(self, name: str, ty: Type, le: bool = False, lt: bool = False) -> Scope:
        return Scope(
            self.env + ((name, ty),),
            self.le | {name} if le or lt else self.le,
            self.lt | {name} if lt else self.lt,
        )


@dataclass
class _FunctionState:
    """What the generator knows about the function it is filling in."""

    sig: Sig
    counter: int = 0
    names: set[str] = field(default_factory=set)


@st.composite
def modules(draw) -> Module:
    """A random well-typed module, already type-checked."""
    return infer_module(_ModuleGen(draw).module())


class _ModuleGen:
    """Draws one module; ``gen(ty, scope, depth)`` builds an expression of type ``ty``."""

    def __init__(self, draw):
        self.draw = draw
        dims = draw(st.lists(st.integers(1, 6), min_size=2, max_size=3, unique=True))
        self.dims = dims
        self.vocab = draw(st.integers(2, 20))
        self.adts = _adts(dims[0])
        self.adt_map = {a.name: a for a in self.adts}
        self.ctor_map = {c.name: (a, c) for a in self.adts for c in a.ctors}
        self.params = self._params()
        self.universe = self._universe()
        self.sigs = self._signatures()
        self.fn: _FunctionState | None = None

    # -- small draws ----------------------------------------------------------------
    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def flip(self) -> bool:
        return self.draw(st.booleans())

    def choice(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def pick(self, options):
        """Run one of the option thunks (the first ones are the simplest, for shrinking)."""
        return self.choice(options)()

    # -- declarations -------------------------------------------------------------
    def _params(self) -> tuple[ParamDef, ...]:
        d0 = self.dims[0]
        out = [
            ParamDef("E", TensorType((self.vocab, d0))),
            ParamDef("I", TensorType((d0,), "int32")),
        ]
        for d in self.dims:
            out.append(ParamDef(f"W{d}", TensorType((d, self.choice(self.dims)))))
            out.append(ParamDef(f"b{d}", TensorType((d,))))
        if self.flip():
            out.append(ParamDef("w.odd", TensorType((d0, d0))))
        return tuple(out)

    def _universe(self) -> list[Type]:
        d0, d1 = self.dims[:2]
        tensors = [TensorType(()), TensorType((d0,)), TensorType((d1,)), TensorType((d0, d1))]
        adts = [
            TREE,
            AdtType("List", (TensorType((d0,)),)),
            AdtType("List", (INT,)),
            AdtType("Pair", (INT, TensorType((d1,)))),
            AdtType("Option", (TREE,)),
            AdtType("Shape"),
            AdtType("Rose"),
        ]
        tuples = [TupleType((TensorType((d0,)), INT)), TupleType((BOOL,)), UNIT]
        return tensors + [TensorType((d0,), "int32"), INT, BOOL, FLOAT] + adts + tuples

    def _signatures(self) -> list[Sig]:
        layers = [self.int(0, 2), self.int(0, 2), self.int(0, 1)]
        sigs: list[Sig] = []
        for layer, count in enumerate(layers):
            for _ in range(count):
                first = (TREE,) if layer == 1 else ()
                rest = tuple(self.choice(self.universe) for _ in range(self.int(0, 2)))
                name = self.choice([f"f{len(sigs)}", f"f.{len(sigs)}"])
                sigs.append(Sig(name, first + rest, self.choice(self.universe), layer, len(sigs)))
        main_params = tuple(self.choice(self.universe) for _ in range(self.int(1, 2)))
        entry = self.choice(["main", "start"])
        sigs.append(Sig(entry, main_params, self.choice(self.universe), 2, len(sigs)))
        return sigs

    def module(self) -> Module:
        functions = [self.function(s) for s in self.sigs]
        order = self.draw(st.permutations(range(len(functions))))
        sizes = tuple((f"D{i}", d) for i, d in enumerate(self.dims)) + (("V", self.vocab),)
        return Module(
            sizes,
            self.params,
            self.adts,
            tuple(functions[i] for i in order),
            self.sigs[-1].name,
        )

    def function(self, sig: Sig) -> Function:
        self.fn = _FunctionState(sig)
        params = tuple(Var(self.fresh(), ty=t) for t in sig.params)
        scope = Scope()
        for i, p in enumerate(params):
            scope = scope.bind(p.name, p.ty, le=sig.layer == 1 and i == 0)
        is_entry = sig is self.sigs[-1]
        depth = self.int(1, 3)
        if sig.layer == 1 and self.int(0, 3):
            return Function(sig.name, params, sig.ret, self.match(sig.ret, scope, depth))
        body = self.block(sig.ret, scope, depth, phases=is_entry)
        return Function(sig.name, params, sig.ret, body)

    def fresh(self) -> str:
        """A variable name unique within the current function, in one of a few spellings."""
        n = self.fn.counter
        self.fn.counter += 1
        return self.choice([f"v{n}", f"{n}", f"_{n}", f"t.{n}"])

    # -- blocks ---------------------------------------------------------------------
    def block(self, ty: Type, scope: Scope, depth: int, phases: bool = False) -> Expr:
        """Zero or more let bindings, then an expression of type ``ty``."""
        bindings = []
        for _ in range(self.int(0, 3)):
            if phases and self.flip():
                value, vty = Phase(), UNIT
            else:
                value, vty = self.binding_value(scope, max(depth - 1, 0))
            name = self.fresh()
            bindings.append(Binding(Var(name, ty=vty), value))
            scope = scope.bind(name, vty)
        body = self.gen(ty, scope, depth)
        return Let(tuple(bindings), body) if bindings else body

    def binding_value(self, scope: Scope, depth: int) -> tuple[Expr, Type]:
        """A value to bind and its type: usually of a universe type, sometimes special."""
        options = [
            lambda: self.typed(self.choice(self.universe), scope, depth),
            lambda: self.split_binding(scope, depth),
            lambda: self.global_ref(),
        ]
        callees = self.callables(scope)
        if callees:
            options.append(lambda: self.parallel(callees, scope, depth))
        mappable = self.mappable(callees)
        if mappable:
            options.append(lambda: self.map_call(self.choice(mappable), scope, depth))
        return self.pick(options)

    def global_ref(self) -> tuple[Expr, Type]:
        """Any function as a value (not a call, so recursion does not matter)."""
        sig = self.choice(self.sigs)
        return GlobalRef(sig.name), sig.type

    def typed(self, ty: Type, scope: Scope, depth: int) -> tuple[Expr, Type]:
        return self.gen(ty, scope, depth), ty

    def split_binding(self, scope: Scope, depth: int) -> tuple[Expr, Type]:
        part = TensorType((self.choice(self.dims),))
        n = self.int(1, 3)
        x = self.gen(TensorType((part.shape[0] * n,)), scope, depth)
        return OpCall("split", (x,), (("sections", n),)), TupleType((part,) * n)

    # -- expressions --------------------------------------------------------------
    def gen(self, ty: Type, scope: Scope, depth: int) -> Expr:
        """An expression of type ``ty`` using variables of ``scope``."""
        options = self.leaf_options(ty, scope)
        if depth > 0:
            options += self.compound_options(ty, scope, depth - 1)
        return self.pick(options)

    def leaf_options(self, ty: Type, scope: Scope) -> list:
        out = [lambda n=n: Var(n) for n, t in scope.env if t == ty]
        for n, t in scope.env:
            if isinstance(t, TupleType):
                out += [lambda n=n, i=i: Proj(Var(n), i) for i, f in enumerate(t.fields) if f == ty]
        out += [lambda p=p: ParamRef(p.name) for p in self.params if p.ty == ty]
        return out + self.constant_options(ty)

    def constant_options(self, ty: Type) -> list:
        """Leaves that need no variables: literals, ``zeros``, leaf constructors, tuples."""
        if ty == INT:
            return [lambda: Const(self.draw(st.integers(-(2**40), 2**40)))]
        if ty == FLOAT:
            return [lambda: Const(self.draw(FLOATS))]
        if ty == BOOL:
            return [lambda: Const(self.flip())]
        if isinstance(ty, TensorType):
            return self.tensor_leaves(ty)
        if isinstance(ty, TupleType):
            return [lambda: TupleExpr(tuple(self.gen(f, Scope(), 0) for f in ty.fields))]
        if isinstance(ty, AdtType):
            return [lambda: self.ctor(LEAF_CTOR[ty.name], ty, Scope(), 0)]
        if isinstance(ty, FuncType):
            return [lambda: GlobalRef(self.choice(s.name for s in self.sigs if s.type == ty))]
        raise AssertionError(f"no leaf for {ty}")

    def tensor_leaves(self, ty: TensorType) -> list:
        if ty.dtype != "float32":
            return [lambda: Const(self.int(-9, 9), ty=ty)] if ty.shape == () else []
        out = [
            lambda op=op: OpCall(op, (), (("shape", self.shape_attr(ty.shape)),))
            for op in ("zeros", "ones")
        ]
        if ty.shape == ():
            out.append(lambda: Const(self.draw(FLOATS), ty=ty))
        return out

    def shape_attr(self, shape: tuple[int, ...], infer: bool = False):
        """The ``shape`` attribute as a tuple or an int (or, for ``reshape``, with a -1)."""
        if len(shape) == 1 and self.flip():
            return shape[0]
        if infer and shape and self.flip():
            i = self.int(0, len(shape) - 1)
            return shape[:i] + (-1,) + shape[i + 1 :]
        return shape

    def compound_options(self, ty: Type, scope: Scope, depth: int) -> list:
        out = [
            lambda: If(
                self.gen(BOOL, scope, depth),
                self.block(ty, scope, depth),
                self.block(ty, scope, depth),
            ),
            lambda: self.match(ty, scope, depth),
            lambda: self.let_expr(ty, scope, depth),
        ]
        out += [
            lambda c=c: self.call(c, scope, depth) for c in self.callables(scope) if c.ret == ty
        ]
        out += self.typed_compounds(ty, scope, depth)
        return out

    def typed_compounds(self, ty: Type, scope: Scope, depth: int) -> list:
        if isinstance(ty, TensorType):
            if ty.dtype == "float32":
                return _TensorOps(self, scope, depth).options(ty)
            return self.int_tensor_ops(ty, scope, depth)
        if ty in (INT, FLOAT, BOOL):
            return _HostOps(self, scope, depth).options(ty)
        if isinstance(ty, AdtType):
            return self.adt_options(ty, scope, depth)
        if isinstance(ty, TupleType):
            return [lambda: TupleExpr(tuple(self.gen(f, scope, depth) for f in ty.fields))]
        return []

    def int_tensor_ops(self, ty: TensorType, scope: Scope, depth: int) -> list:
        scalar = TensorType((), ty.dtype)
        return [
            lambda: OpCall(
                self.choice(BINARY[:3]),
                (self.gen(ty, scope, depth), self.gen(scalar, scope, depth)),
            ),
            lambda: OpCall(self.choice(("neg", "relu")), (self.gen(ty, scope, depth),)),
        ]

    def adt_options(self, ty: AdtType, scope: Scope, depth: int) -> list:
        adt = self.adt_map[ty.name]
        out = [lambda c=c: self.ctor(c.name, ty, scope, depth) for c in adt.ctors]
        if ty.name == "List":
            for c in self.mappable(self.callables(scope)):
                if c.ret == ty.args[0]:
                    out.append(lambda c=c: self.map_call(c, scope, depth)[0])
        return out

    def ctor(self, name: str, ty: AdtType, scope: Scope, depth: int) -> CtorCall:
        """``name(fields...)`` of type ``ty``; generic constructors carry their type."""
        adt, ctor = self.ctor_map[name]
        mapping = dict(zip(adt.type_params, ty.args, strict=True))
        args = tuple(self.gen(substitute(f, mapping), scope, depth) for f in ctor.fields)
        return CtorCall(name, args, ty=ty if ty.args else None)

    def let_expr(self, ty: Type, scope: Scope, depth: int) -> Let:
        """A ``let`` in expression position, possibly with no bindings at all."""
        e = self.block(ty, scope, depth)
        return e if isinstance(e, Let) else Let((), e)

    # -- calls ----------------------------------------------------------------------
    def callables(self, scope: Scope) -> list[Sig]:
        """Functions the current one may call without risking endless recursion."""
        cur = self.fn.sig
        return [c for c in self.sigs if _may_call(cur, c, bool(scope.lt))]

    def call(self, c: Sig, scope: Scope, depth: int) -> FnCall:
        args = []
        for i, p in enumerate(c.params):
            if i == 0 and c.layer == 1 and self.fn.sig.layer == 1:
                args.append(Var(self.choice(sorted(scope.lt))))
            else:
                args.append(self.gen(p, scope, depth))
        return FnCall(c.name, tuple(args))

    def parallel(self, callees: list[Sig], scope: Scope, depth: int) -> tuple[Expr, Type]:
        chosen = [self.choice(callees) for _ in range(self.int(1, 3))]
        calls = tuple(self.call(c, scope, depth) for c in chosen)
        return Parallel(calls), TupleType(tuple(c.ret for c in chosen))

    def mappable(self, callees: list[Sig]) -> list[Sig]:
        """Callees ``map`` may use: one parameter at least, and no tree recursion."""
        recursive = self.fn.sig.layer == 1
        return [c for c in callees if c.params and not (recursive and c.layer == 1)]

    def map_call(self, c: Sig, scope: Scope, depth: int) -> tuple[Expr, Type]:
        xs = self.gen(AdtType("List", (c.params[0],)), scope, depth)
        extra = tuple(self.gen(p, scope, depth) for p in c.params[1:])
        return Map(c.name, xs, extra), AdtType("List", (c.ret,))

    # -- match ----------------------------------------------------------------------
    def match(self, ty: Type, scope: Scope, depth: int) -> Match:
        """An exhaustive match; cases on a tree no larger than the parameter bind smaller ones."""
        adt_vars = [(n, t) for n, t in scope.env if isinstance(t, AdtType)]
        trees = [(n, t) for n, t in adt_vars if n in scope.le]
        if trees and self.int(0, 3):
            name, st_ty = self.choice(trees)
            scrutinee: Expr = Var(name)
        elif adt_vars and self.flip():
            name, st_ty = self.choice(adt_vars)
            scrutinee = Var(name)
        else:
            st_ty = self.choice(t for t in self.universe if isinstance(t, AdtType))
            scrutinee, name = self.gen(st_ty, scope, depth), None
        shrinks = name in scope.le
        clauses = []
        for pattern, binds in self.clause_patterns(st_ty):
            inner = scope
            for n, t, nested in binds:
                tree = shrinks and t == TREE
                inner = inner.bind(n, t, le=tree, lt=tree and nested)
            clauses.append(Clause(pattern, self.block(ty, inner, depth)))
        return Match(scrutinee, tuple(clauses))

    def clause_patterns(self, ty: AdtType) -> list:
        """Exhaustive patterns for ``ty``, each with the variables it binds."""
        adt = self.adt_map[ty.name]
        mapping = dict(zip(adt.type_params, ty.args, strict=True))
        catch_all = self.flip()
        out = []
        for c in adt.ctors:
            fields = [substitute(f, mapping) for f in c.fields]
            if self.flip() and any(isinstance(f, AdtType) for f in fields):
                out.append(self.ctor_pattern(c.name, fields, nest=True))
            if not catch_all or self.flip():
                out.append(self.ctor_pattern(c.name, fields, nest=False))
        if catch_all:
            out.append(self.var_or_wild(ty, nested=False))
        return out

    def ctor_pattern(self, ctor: str, fields: list[Type], nest: bool):
        pats, binds = [], []
        for f in fields:
            if nest and isinstance(f, AdtType) and self.flip():
                adt = self.adt_map[f.name]
                sub = self.choice(adt.ctors)
                mapping = dict(zip(adt.type_params, f.args, strict=True))
                p, b = self.ctor_pattern(
                    sub.name, [substitute(x, mapping) for x in sub.fields], False
                )
            else:
                p, b = self.var_or_wild(f, nested=True)
            pats.append(p)
            binds += b
        return PCtor(ctor, tuple(pats)), binds

    def var_or_wild(self, ty: Type, nested: bool):
        if self.flip():
            return PWild(), []
        name = self.fresh()
        return PVar(Var(name, ty=ty)), [(name, ty, nested)]


def _may_call(cur: Sig, callee: Sig, has_smaller_tree: bool) -> bool:
    """The layer rule of the module docstring."""
    earlier = callee.index < cur.index
    if callee.layer == 0:
        return cur.layer > 0 or earlier
    if callee.layer == 1:
        return cur.layer == 2 or (cur.layer == 1 and has_smaller_tree)
    return cur.layer == 2 and earlier


class _TensorOps:
    """Float32 tensor expressions of a target shape, built from the op shape rules."""

    def __init__(self, g: _ModuleGen, scope: Scope, depth: int):
        self.g, self.scope, self.depth = g, scope, depth

    def x(self, shape: tuple[int, ...]) -> Expr:
        return self.g.gen(TensorType(shape), self.scope, self.depth)

    def options(self, ty: TensorType) -> list:
        s = ty.shape
        out = [
            lambda: OpCall(self.g.choice(UNARY), (self.x(s),)),
            lambda: self.binary(s),
            lambda: self.reshape(s),
            lambda: self.reduce(s),
        ]
        if s:
            out += [
                lambda: self.split_proj(s),
                lambda: self.slice(s),
                lambda: self.transpose(s),
                lambda: self.softmax(s),
            ]
            out += [lambda: self.dense(s), lambda: self.layer_norm(s)]
        if any(d >= 2 for d in s):
            out.append(lambda: self.concat(s))
        if s == self.g.params[0].ty.shape[1:]:
            out.append(
                lambda: OpCall("embed", (ParamRef("E"), self.g.gen(INT, self.scope, self.depth)))
            )
        return out

    def axis(self, s: tuple[int, ...], pred=lambda d: True) -> int | None:
        axes = [i for i, d in enumerate(s) if pred(d)]
        return self.g.choice(axes) if axes else None

    def axis_attr(self, ax: int, rank: int, default: int = 0) -> tuple:
        """``axis=`` as stored by the frontend: left out when default, maybe negative."""
        if ax == default and self.g.flip():
            return ()
        return (("axis", ax - rank if self.g.flip() else ax),)

    def binary(self, s):
        other = list(s)
        style = self.g.int(0, 2)
        if style == 1 and s:
            other[self.g.int(0, len(s) - 1)] = 1
        elif style == 2:
            other = other[self.g.int(0, len(s)) :]
        args = (self.x(s), self.x(tuple(other)))
        return OpCall(self.g.choice(BINARY), args if self.g.flip() else args[::-1])

    def reshape(self, s):
        return OpCall(
            "reshape", (self.x((math.prod(s),)),), (("shape", self.g.shape_attr(s, infer=True)),)
        )

    def reduce(self, s):
        op = self.g.choice(("sum", "mean", "max"))
        if s == () and self.g.flip():
            src = tuple(self.g.choice(self.g.dims) for _ in range(self.g.int(0, 2)))
            return OpCall(op, (self.x(src),), (("axis", None),))
        ones = self.axis(s, lambda d: d == 1)
        if ones is not None and self.g.flip():
            src = s[:ones] + (self.g.choice(self.g.dims),) + s[ones + 1 :]
            return OpCall(op, (self.x(src),), (("axis", ones), ("keepdims", True)))
        ax = self.g.int(0, len(s))
        src = s[:ax] + (self.g.choice(self.g.dims),) + s[ax:]
        return OpCall(op, (self.x(src),), (("axis", ax - len(src) if self.g.flip() else ax),))

    def split_proj(self, s):
        n = self.g.int(1, 3)
        ax = self.g.int(0, len(s) - 1)
        src = s[:ax] + (s[ax] * n,) + s[ax + 1 :]
        attrs = self.axis_attr(ax, len(s)) + (("sections", n),)
        return Proj(OpCall("split", (self.x(src),), attrs), self.g.int(0, n - 1))

    def slice(self, s):
        ax = self.g.int(0, len(s) - 1)
        start = self.g.int(0, 2)
        src = s[:ax] + (s[ax] + start + self.g.int(0, 2),) + s[ax + 1 :]
        attrs = self.axis_attr(ax, len(s)) + (("start", start), ("stop", start + s[ax]))
        return OpCall("slice", (self.x(src),), attrs)

    def transpose(self, s):
        if self.g.flip():
            axes = tuple(reversed(range(len(s))))
            return OpCall("transpose", (self.x(tuple(reversed(s))),), (("axes", axes),))
        attrs = (("axes", None),) if self.g.flip() else ()
        return OpCall("transpose", (self.x(tuple(reversed(s))),), attrs)

    def softmax(self, s):
        return OpCall("softmax", (self.x(s),), self.axis_attr(len(s) - 1, len(s), len(s) - 1))

    def dense(self, s):
        w = [p for p in self.g.params if p.name.startswith("W") and p.ty.shape[0] == s[-1]]
        if not w:
            return self.x(s)
        weight = self.g.choice(w)
        args = (self.x(s[:-1] + (weight.ty.shape[1],)), ParamRef(weight.name))
        if self.g.flip():
            args += (ParamRef(f"b{s[-1]}"),)
        return OpCall("dense", args)

    def layer_norm(self, s):
        b = [p for p in self.g.params if p.ty.shape == s[-1:] and p.name.startswith("b")]
        if not b:
            return self.x(s)
        gamma = ParamRef(b[0].name)
        eps = (("eps", self.g.draw(FLOATS)),) if self.g.flip() else ()
        return OpCall("layer_norm", (self.x(s), gamma, gamma), eps)

    def concat(self, s):
        ax = self.axis(s, lambda d: d >= 2)
        cut = self.g.int(1, s[ax] - 1)
        parts = (s[:ax] + (cut,) + s[ax + 1 :], s[:ax] + (s[ax] - cut,) + s[ax + 1 :])
        return OpCall("concat", tuple(self.x(p) for p in parts), self.axis_attr(ax, len(s)))


class _HostOps:
    """Host scalar expressions (int, float, bool) from the ``h.*`` ops and tensor reads."""

    def __init__(self, g: _ModuleGen, scope: Scope, depth: int):
        self.g, self.scope, self.depth = g, scope, depth

    def e(self, ty: Type) -> Expr:
        return self.g.gen(ty, self.scope, self.depth)

    def options(self, ty: Type) -> list:
        if ty == INT:
            return [
                lambda: OpCall(self.g.choice(ARITH), (self.e(INT), self.e(INT))),
                lambda: OpCall("h.neg", (self.e(INT),)),
                lambda: OpCall("argmax", (self.e(self.g.choice(self.g.universe[:4])),)),
            ]
        if ty == FLOAT:
            return [
                lambda: OpCall("h.truediv", (self.num(), self.num())),
                lambda: OpCall(self.g.choice(ARITH[:3]), (self.e(FLOAT), self.num())),
                lambda: OpCall("item", (self.e(TensorType(self.g.choice([(), (1,)]))),)),
            ]
        return [
            lambda: OpCall(self.g.choice(COMPARE), (self.num(), self.num())),
            lambda: OpCall(
                self.g.choice(("h.eq", "h.ne", "h.and", "h.or")), (self.e(BOOL), self.e(BOOL))
            ),
            lambda: OpCall("h.not", (self.e(BOOL),)),
        ]

    def num(self) -> Expr:
        return self.e(self.g.choice((INT, FLOAT)))
