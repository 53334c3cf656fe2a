"""Lowering of source expressions to IR expressions.

Types are tracked while lowering (with the IR's own inference, see
:class:`acrobat.ir.typecheck.FunctionInference`) because the same Python operator means
different things on tensors and on host scalars: ``a + b`` is the tensor op ``add`` or
the host op ``h.add``. The IR produced here is untyped except for literals and
annotated variables; the final :func:`acrobat.ir.typecheck.infer_module` types it all.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from acrobat.errors import (
    AcrobatNameError,
    AcrobatPhaseError,
    AcrobatSyntaxError,
    AcrobatTypeError,
    Span,
)
from acrobat.frontend.declarations import Declarations, unsupported
from acrobat.frontend.reductions import REDUCTIONS
from acrobat.ir.nodes import (
    Const,
    CtorCall,
    Expr,
    FnCall,
    GlobalRef,
    If,
    Map,
    OpCall,
    Parallel,
    ParamRef,
    Proj,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import REGISTRY
from acrobat.ir.typecheck import FunctionInference
from acrobat.ir.types import BOOL, FLOAT, INT, AdtType, ScalarType, TensorType, TupleType, Type

TENSOR_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.MatMult: "matmul",
}
HOST_BINOPS = {
    ast.Add: "h.add",
    ast.Sub: "h.sub",
    ast.Mult: "h.mul",
    ast.Div: "h.truediv",
    ast.FloorDiv: "h.floordiv",
    ast.Mod: "h.mod",
    ast.Pow: "h.pow",
}
# Python built-ins on host values: what each accepts, and what to write instead
HOST_BUILTINS = {
    "abs": ("one host int or float", "for a tensor write maximum(x, neg(x))"),
    "min": (
        "two or more host ints/floats",
        "min(a, b, ...) compares host numbers; for tensors use minimum(a, b)",
    ),
    "max": (
        "two or more host ints/floats, or a tensor to reduce",
        "max(a, b, ...) compares host numbers; max(x) or max(x, axis) reduces a tensor; "
        "maximum(a, b) is the elementwise tensor max",
    ),
    "len": (
        "one List",
        "len(xs) counts the elements of a List[T]; tensor dimensions are sizes, known statically",
    ),
    "int": (
        "one host int, float or bool",
        "int(a) truncates a host number toward zero; for a tensor write int(item(x))",
    ),
    "float": ("one host int, float or bool", "for a tensor write item(x)"),
}
COMPARE = {
    ast.Lt: "h.lt",
    ast.LtE: "h.le",
    ast.Gt: "h.gt",
    ast.GtE: "h.ge",
    ast.Eq: "h.eq",
    ast.NotEq: "h.ne",
}


class ExprLowerer:
    """Lowers expressions of one function body; subclasses add statements."""

    decl: Declarations
    inf: FunctionInference
    scope: dict[str, str]  # source name -> IR variable name

    def span(self, node: ast.AST) -> Span:
        return self.decl.span(node)

    def type_of(self, e: Expr) -> Type:
        """The (resolved) type of an untyped IR expression in the current environment."""
        return self.inf.resolve(self.inf.infer(e).ty)

    # -- entry point -------------------------------------------------------------------
    def expr(self, node: ast.expr) -> Expr:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise unsupported(node, self.decl)
        return method(node)

    # -- atoms ------------------------------------------------------------------------
    def _Name(self, node: ast.Name) -> Expr:
        sp, name = self.span(node), node.id
        if name in self.scope:
            return Var(self.scope[name], span=sp)
        if name in self.decl.params:
            return ParamRef(name, span=sp)
        if name in self.decl.sizes:
            return Const(self.decl.sizes[name], span=sp)
        if name in self.decl.consts:
            return Const(self.decl.consts[name], span=sp)
        if name in self.decl.functions:
            return GlobalRef(name, span=sp)
        if name in self.decl.ctors:
            raise AcrobatSyntaxError(f"constructor {name} must be called", sp, hint=f"{name}(...)")
        if name.startswith("__"):
            raise AcrobatNameError(f"names starting with '__' are not allowed: {name!r}", sp)
        raise AcrobatNameError(f"undefined name {name!r}", sp)

    def _Constant(self, node: ast.Constant) -> Expr:
        v = node.value
        if type(v) not in (int, float, bool):
            raise AcrobatSyntaxError(
                f"{type(v).__name__} literals are not supported",
                self.span(node),
                hint="literals are ints, floats and True/False",
            )
        return Const(v, span=self.span(node))

    # -- operators --------------------------------------------------------------------
    def _BinOp(self, node: ast.BinOp) -> Expr:
        sp = self.span(node)
        a, b = self.expr(node.left), self.expr(node.right)
        ta, tb = self.type_of(a), self.type_of(b)
        if isinstance(ta, TensorType) or isinstance(tb, TensorType):
            op = TENSOR_BINOPS.get(type(node.op))
            if op is None:
                raise AcrobatSyntaxError(
                    f"operator {_op_text(node.op)} is not defined on tensors", sp
                )
            a, b = self.tensor_operand(a, ta, node.left), self.tensor_operand(b, tb, node.right)
            return OpCall(op, (a, b), span=sp)
        op = HOST_BINOPS.get(type(node.op))
        if op is None:
            raise AcrobatSyntaxError(f"operator {_op_text(node.op)} is not supported", sp)
        return fold(OpCall(op, (a, b), span=sp))

    def tensor_operand(self, e: Expr, ty: Type, node: ast.expr) -> Expr:
        """A tensor operand; a numeric literal becomes a 0-d float32 tensor constant and
        any other host int/float a ``scalar(...)`` (a 0-d tensor made in the kernel)."""
        if isinstance(ty, TensorType):
            return e
        if ty in (ScalarType("int"), ScalarType("float")):
            if isinstance(e, Const):
                return Const(float(e.value), ty=TensorType(()), span=e.span)
            return OpCall("scalar", (e,), span=e.span)
        raise AcrobatTypeError(
            f"cannot mix a host {ty} with a tensor",
            self.span(node),
            hint="only host ints and floats combine with tensors; "
            "turn a bool into a number first (1.0 if b else 0.0)",
        )

    def _UnaryOp(self, node: ast.UnaryOp) -> Expr:
        sp = self.span(node)
        if isinstance(node.op, ast.UAdd):
            return self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
                return Const(-node.operand.value, span=sp)
            x = self.expr(node.operand)
            op = "neg" if isinstance(self.type_of(x), TensorType) else "h.neg"
            return OpCall(op, (x,), span=sp)
        if isinstance(node.op, ast.Not):
            return OpCall("h.not", (self.expr(node.operand),), span=sp)
        raise AcrobatSyntaxError(f"operator {_op_text(node.op)} is not supported", sp)

    def _BoolOp(self, node: ast.BoolOp) -> Expr:
        op = "h.and" if isinstance(node.op, ast.And) else "h.or"
        out = self.expr(node.values[0])
        for v in node.values[1:]:
            out = OpCall(op, (out, self.expr(v)), span=self.span(node))
        return out

    def _Compare(self, node: ast.Compare) -> Expr:
        sp = self.span(node)
        if len(node.ops) != 1:
            raise AcrobatSyntaxError(
                "chained comparisons are not supported", sp, hint="write a < b and b < c"
            )
        op = COMPARE.get(type(node.ops[0]))
        if op is None:
            raise AcrobatSyntaxError(f"comparison {_op_text(node.ops[0])} is not supported", sp)
        a, b = self.expr(node.left), self.expr(node.comparators[0])
        for e in (a, b):
            if isinstance(self.type_of(e), TensorType):
                raise AcrobatTypeError(
                    "tensors cannot be compared directly",
                    sp,
                    hint="read the value to the host first: item(x) > 0.5 or argmax(x) == 1",
                )
        return OpCall(op, (a, b), span=sp)

    def _IfExp(self, node: ast.IfExp) -> Expr:
        return If(
            self.expr(node.test),
            self.expr(node.body),
            self.expr(node.orelse),
            span=self.span(node),
        )

    def _Tuple(self, node: ast.Tuple) -> Expr:
        return TupleExpr(tuple(self.expr(e) for e in node.elts), span=self.span(node))

    def _Subscript(self, node: ast.Subscript) -> Expr:
        sp = self.span(node)
        base = self.expr(node.value)
        ty = self.type_of(base)
        if isinstance(ty, TupleType):
            idx = self.attr_value(node.slice)
            if type(idx) is not int:
                raise AcrobatSyntaxError("tuple indices must be constant ints", sp)
            if not -len(ty.fields) <= idx < len(ty.fields):
                raise AcrobatTypeError(f"index {idx} is out of range for {ty}", sp)
            return Proj(base, idx % len(ty.fields), span=sp)
        if isinstance(ty, AdtType) and ty.name == "List" and not isinstance(node.slice, ast.Slice):
            return OpCall("h.nth", (base, self.expr(node.slice)), span=sp)
        if isinstance(ty, TensorType) and isinstance(node.slice, ast.Slice):
            s = node.slice
            if s.step is not None or not ty.shape:
                raise AcrobatSyntaxError("tensor slices take start:stop only", sp)
            length = _offset_length(s)
            if length is not None and not self.is_static(s.lower):
                return self.offset_slice(base, ty, self.expr(s.lower), length, node)
            start = 0 if s.lower is None else self.attr_value(s.lower)
            stop = ty.shape[0] if s.upper is None else self.attr_value(s.upper)
            return OpCall(
                "slice", (base,), (("axis", 0), ("start", start), ("stop", stop)), span=sp
            )
        raise AcrobatTypeError(
            f"cannot index a value of type {ty}",
            sp,
            hint="index tuples with constants (t[0]) and lists with host ints (xs[k]); "
            "slice tensors with x[a:b]",
        )

    def is_static(self, node: ast.expr) -> bool:
        try:
            self.attr_value(node)
        except AcrobatSyntaxError:
            return False
        return True

    def offset_slice(self, x: Expr, ty: TensorType, k: Expr, length: int, node) -> Expr:
        """``x[k:k+L]`` at a host int ``k`` (``L`` static): rows ``k .. k+L-1`` of ``x``
        (as a table of ``x.shape[0]`` rows) looked up with ``embed``, concatenated: the
        result has a static shape, and a ``k`` outside ``[0, rows - L]`` is ``embed``'s
        typed error, the same on every path."""
        sp = self.span(node)
        if self.type_of(k) != INT:
            raise AcrobatTypeError(f"a slice start must be a host int, got {self.type_of(k)}", sp)
        n, rest = ty.shape[0], ty.shape[1:]
        if not 1 <= length <= n:
            raise AcrobatTypeError(f"slice length {length} does not fit in {ty}", sp)
        width = math.prod(rest)
        if not isinstance(k, (Var, Const)):
            # computed once, read by every row's lookup: the slice goes to a generated
            # helper of which it is a parameter
            name = self.helper_name("slice")
            params = [("x", ty), ("k", INT)]
            ret = TensorType((length, *rest), ty.dtype)
            body = ast.parse(f"return x[k:k + {length}]").body
            for sub in ast.walk(body[0]):
                if isinstance(sub, (ast.expr, ast.stmt)):
                    ast.copy_location(sub, node)
            self.register_helper(name, params, ret, body, node)
            return FnCall(name, (x, k), span=sp)
        table = OpCall("reshape", (x,), (("shape", (n, width)),), span=sp)
        rows = [
            OpCall("embed", (table, fold(OpCall("h.add", (k, Const(j)), span=sp))), span=sp)
            for j in range(length)
        ]
        flat = rows[0] if length == 1 else OpCall("concat", tuple(rows), (("axis", 0),), span=sp)
        return OpCall("reshape", (flat,), (("shape", (length, *rest)),), span=sp)

    # -- calls ------------------------------------------------------------------------
    def _Call(self, node: ast.Call) -> Expr:
        sp = self.span(node)
        if not isinstance(node.func, ast.Name):
            raise unsupported(node.func, self.decl, "calling anything but a plain name")
        name = node.func.id
        if name == "phase":
            raise AcrobatPhaseError(
                "phase() is a statement of its own",
                sp,
                hint="write phase() on its own line at the top level of main",
            )
        if name == "parallel":
            return self.parallel(node)
        if name == "map":
            return self.map_call(node)
        if name == "zip" and name not in self.decl.functions:
            return self.zip_call(node)
        if name in self.scope:
            raise AcrobatTypeError(f"{name!r} is a local value, not a function", sp)
        if name in self.decl.functions:
            self.no_keywords(node, name)
            args = tuple(self.expr(a) for a in node.args)
            if name in self.decl.generics:
                name = self.instance_of(name, [self.type_of(a) for a in args], node)
            return FnCall(name, args, span=sp)
        if name in self.decl.ctors:
            self.no_keywords(node, name)
            return CtorCall(name, tuple(self.expr(a) for a in node.args), span=sp)
        if name in REDUCTIONS and node.args and not isinstance(node.args[0], ast.Starred):
            # sum/max/argmax of a List (and attend) are list reductions; of a tensor, ops
            first = self.expr(node.args[0])
            ty = self.type_of(first)
            if name == "attend" or isinstance(ty, AdtType) and ty.name == "List":
                return self.list_reduction(name, first, node)
            if name in HOST_BUILTINS:
                return self.host_builtin(name, node, first)
            return self.op_call(name, node, (first,))
        if name in HOST_BUILTINS:
            return self.host_builtin(name, node)
        if name in REGISTRY and not name.startswith("h."):
            return self.op_call(name, node)
        if name.startswith("__"):
            raise AcrobatNameError(f"names starting with '__' are not allowed: {name!r}", sp)
        raise AcrobatNameError(
            f"call to undefined function {name!r}",
            sp,
            hint="functions are the program's own `def`s, ADT constructors and built-in ops",
        )

    def no_keywords(self, node: ast.Call, name: str) -> None:
        if node.keywords:
            raise AcrobatSyntaxError(f"{name} takes positional arguments only", self.span(node))
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise unsupported(a, self.decl)

    def host_builtin(self, name: str, node: ast.Call, first: Expr | None = None) -> Expr:
        """``abs``/``min``/``max``/``len`` on host values; ``max`` of a tensor is the
        reduction op, told apart by the type of the first argument (``first``: that
        argument, already lowered)."""
        sp = self.span(node)
        self.no_starred(node)
        args = [first] if first is not None else [self.expr(a) for a in node.args[:1]]
        if name == "max" and args and isinstance(self.type_of(args[0]), TensorType):
            return self.op_call(name, node, tuple(args))
        args += [self.expr(a) for a in node.args[1:]]
        types = [self.type_of(a) for a in args]
        wants, hint = HOST_BUILTINS[name]
        if name == "len":
            fits = len(types) == 1 and isinstance(types[0], AdtType) and types[0].name == "List"
        elif name in ("int", "float"):
            fits = len(types) == 1 and types[0] in (INT, FLOAT, BOOL)
        else:
            fits = (len(args) == 1 if name == "abs" else len(args) >= 2) and all(
                t in (INT, FLOAT) for t in types
            )
        if node.keywords or not fits:
            got = ", ".join(map(str, types)) + ", keywords" * bool(node.keywords)
            raise AcrobatTypeError(f"{name} takes {wants}, got ({got})", sp, hint=hint)
        out = fold(OpCall("h." + name, tuple(args[:2]), span=sp))
        for a in args[2:]:
            out = fold(OpCall("h." + name, (out, a), span=sp))
        return out

    def op_call(self, name: str, node: ast.Call, lowered: tuple[Expr, ...] = ()) -> Expr:
        """A registry op; ``lowered`` are its first arguments, already lowered."""
        op = REGISTRY[name]
        self.no_starred(node)
        n_tensor = len(node.args)
        positional = op.positional  # split(x, 3), slice(x, 0, H), zeros(H), sum(x, 0)
        if positional and op.max_arity is not None and len(node.args) > op.max_arity:
            n_tensor = op.max_arity
        extra = node.args[n_tensor:]
        if len(extra) > len(positional):
            raise AcrobatTypeError(
                f"{name} takes {op.max_arity} tensor argument(s) and attributes {positional}",
                self.span(node),
            )
        attrs: dict[str, Any] = {k: self.attr_value(v) for k, v in zip(positional, extra)}
        for kw in node.keywords:
            if kw.arg is None or kw.arg in attrs:
                raise AcrobatSyntaxError(f"bad or repeated keyword in {name}(...)", self.span(kw))
            attrs[kw.arg] = self.attr_value(kw.value)
        args = lowered + tuple(self.expr(a) for a in node.args[len(lowered) : n_tensor])
        return OpCall(name, args, tuple(sorted(attrs.items())), span=self.span(node))

    def no_starred(self, node: ast.Call) -> None:
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise unsupported(a, self.decl)

    def attr_value(self, node: ast.expr) -> Any:
        """A static attribute: a literal, a size, a host constant, a negated number or a
        tuple of them."""
        if isinstance(node, ast.Constant) and (
            node.value is None or type(node.value) in (int, float, bool)
        ):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.decl.consts:
            return self.decl.consts[node.id]
        if isinstance(node, ast.Tuple):
            return tuple(self.attr_value(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.attr_value(node.operand)
            if type(v) in (int, float):
                return -v
        if isinstance(node, (ast.Name, ast.BinOp)):
            try:
                return self.decl.size_value(node)
            except (AcrobatNameError, AcrobatSyntaxError):
                pass
        raise AcrobatSyntaxError(
            f"{ast.unparse(node)} is not a constant",
            self.span(node),
            hint="attributes (axis, sections, shape, ...) must be literals, sizes or host constants",
        )

    def parallel(self, node: ast.Call) -> Expr:
        sp = self.span(node)
        self.no_keywords(node, "parallel")
        calls = []
        for a in node.args:
            if not (
                isinstance(a, ast.Call)
                and isinstance(a.func, ast.Name)
                and a.func.id in self.decl.functions
            ):
                raise AcrobatSyntaxError(
                    "parallel(...) takes calls of the program's functions",
                    self.span(a),
                    hint="parallel(cell(left), cell(right))",
                )
            calls.append(self.expr(a))
        if len(calls) < 2:
            raise AcrobatSyntaxError("parallel(...) needs at least two calls", sp)
        return Parallel(tuple(calls), span=sp)

    def map_call(self, node: ast.Call) -> Expr:
        sp = self.span(node)
        self.no_keywords(node, "map")
        if (
            len(node.args) < 2
            or not isinstance(node.args[0], ast.Name)
            or (node.args[0].id not in self.decl.functions)
        ):
            raise AcrobatSyntaxError(
                "map takes a function of the program and a List", sp, hint="map(f, xs)"
            )
        xs = self.expr(node.args[1])
        extra = tuple(self.expr(a) for a in node.args[2:])
        fn = node.args[0].id
        if fn in self.decl.generics:  # the copy for the elements' (and extras') types
            elem = self.type_of(xs)
            elem = elem.args[0] if isinstance(elem, AdtType) and elem.name == "List" else elem
            fn = self.instance_of(fn, [elem] + [self.type_of(a) for a in extra], node)
        zipped = self.zipped_map(node, fn, xs, extra)
        return zipped or Map(fn, xs, extra, span=sp)


def _offset_length(s: ast.Slice) -> int | None:
    """``L`` of a slice written ``k:k+L`` (``L`` a non-negative int literal), else None."""
    up = s.upper
    if s.lower is None or not (isinstance(up, ast.BinOp) and isinstance(up.op, ast.Add)):
        return None
    if not (isinstance(up.right, ast.Constant) and type(up.right.value) is int):
        return None
    return up.right.value if ast.dump(up.left) == ast.dump(s.lower) else None


def fold(e: OpCall) -> Expr:
    """A host op on literals becomes a literal (so ``x * (1.0 / H)`` or ``H ** -0.5`` can
    scale a tensor); anything else is returned unchanged."""
    if not all(isinstance(a, Const) and a.ty is None for a in e.args):
        return e
    args = [a.value for a in e.args]
    ints = all(type(a) is int for a in args)
    # 2 ** 65 is past int64 already, and 9 ** 9 ** 9 would take minutes to compute
    if e.op == "h.pow" and ints and abs(args[0]) > 1 and args[1] > 64:
        raise AcrobatTypeError(
            f"{args[0]} ** {args[1]} overflows a 64-bit int", e.span, hint="use floats"
        )
    try:
        value = REGISTRY[e.op].impl(*args)
    except (ArithmeticError, ValueError):
        return e  # left for run time, where it raises a located error
    if type(value) not in (int, float, bool):
        return e
    if type(value) is float and not math.isfinite(value):
        raise AcrobatTypeError(
            f"this constant expression is not a finite float ({value})",
            e.span,
            hint="keep constants within about 1.7e308",
        )
    return Const(value, span=e.span)


def _op_text(op: ast.AST) -> str:
    return {
        ast.Pow: "**",
        ast.LShift: "<<",
        ast.RShift: ">>",
        ast.BitOr: "|",
        ast.BitAnd: "&",
        ast.BitXor: "^",
        ast.Invert: "~",
        ast.Is: "is",
        ast.IsNot: "is not",
        ast.In: "in",
        ast.NotIn: "not in",
        ast.MatMult: "@",
        ast.FloorDiv: "//",
        ast.Mod: "%",
    }.get(type(op), type(op).__name__)
