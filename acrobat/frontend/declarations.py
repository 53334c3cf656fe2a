"""Module-level declarations of the modelling language: sizes, weights, ADTs, signatures.

Sizes are evaluated here (``H = Size("H", 256)``, ``F = 4 * H``, ``C = 16``) so every
type in the IR has concrete dimensions. Other literal assignments (``BOS = 0``,
``EPS = 1e-3``, ``DEBUG = False``) are host constants: values for expressions, never
dimensions. Annotations are read from the ``ast`` only.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field
from typing import Any

from acrobat.errors import (
    AcrobatNameError,
    AcrobatSyntaxError,
    AcrobatTypeError,
    SizeLimitError,
    Span,
    UndeclaredSizeError,
)
from acrobat.ir.nodes import AdtDef, CtorDef, ParamDef
from acrobat.ir.ops import REGISTRY
from acrobat.ir.types import (
    BOOL,
    FLOAT,
    INT,
    UNIT,
    AdtType,
    TensorType,
    TupleType,
    Type,
    TypeParam,
)

BUILTIN_NAMES = frozenset(
    {"parallel", "map", "phase", "Size", "Param", "Tensor", "ADT", "TypeVar"}
    | {"abs", "min", "len", "range"}
)
_SIZE_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
SCALARS = {"int": INT, "bool": BOOL, "float": FLOAT}
# Caps on what a source may declare, so a few bytes of it cannot make acrobat allocate gigabytes
# (``Param[2000000000]``). The largest built-in model (Berxit, large) has a 4.2M-element weight
# and 76M weight elements in all.
MAX_SIZE = 1 << 20  # one Size(...) or tensor dimension
MAX_INT = (1 << 63) - 1  # any size expression (module ints are host ints too)
MAX_TENSOR_ELEMENTS = 1 << 26  # the elements of one tensor type
MAX_WEIGHT_ELEMENTS = 1 << 27  # the elements of all weights together


@dataclass
class Declarations:
    """Everything declared at module level, with sizes bound."""

    filename: str
    sizes: dict[str, int] = field(default_factory=dict)
    consts: dict[str, int | float | bool] = field(default_factory=dict)  # host constants
    type_vars: set[str] = field(default_factory=set)
    params: dict[str, ParamDef] = field(default_factory=dict)
    adts: dict[str, AdtDef] = field(default_factory=dict)
    ctors: dict[str, str] = field(default_factory=dict)  # ctor -> ADT name
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    # generic functions (their Signature) and their copies: (name, argument types) -> copy
    generics: dict[str, Any] = field(default_factory=dict)
    instances: dict[tuple, str] = field(default_factory=dict)

    def span(self, node: ast.AST) -> Span:
        return Span(self.filename, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))

    def taken(self, name: str) -> str | None:
        """What ``name`` already denotes at module level, if anything."""
        for kind, table in (
            ("size", self.sizes),
            ("host constant", self.consts),
            ("parameter", self.params),
            ("type", self.adts),
            ("constructor", self.ctors),
            ("function", self.functions),
        ):
            if name in table:
                return kind
        if name in self.type_vars:
            return "type variable"
        if name in REGISTRY:
            return "built-in op"
        if name in BUILTIN_NAMES or name in SCALARS:
            return "built-in name"
        return None

    def declare(self, name: str, node: ast.AST) -> None:
        kind = self.taken(name)
        if kind:
            raise AcrobatNameError(
                f"{name!r} is already defined as a {kind}",
                self.span(node),
                hint="pick another name",
            )
        if name.startswith("__"):
            raise AcrobatNameError(
                f"names starting with '__' are not allowed: {name!r}", self.span(node)
            )

    # -- sizes -----------------------------------------------------------------------
    def size_value(self, node: ast.expr) -> int:
        """Evaluate a size expression: int literals, sizes and + - * // of them."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return self.capped(node.value, node, "an int", MAX_INT)
        if isinstance(node, ast.Name):
            if node.id in self.sizes:
                return self.sizes[node.id]
            if node.id in self.consts:
                raise AcrobatTypeError(
                    f"{node.id} is a host constant, not a size",
                    self.span(node),
                    hint="dimensions must be sizes: positive ints such as "
                    f'{node.id} = 16 or {node.id} = Size("{node.id}", 16)',
                )
            raise AcrobatNameError(
                f"{node.id!r} is not a size",
                self.span(node),
                hint=f'declare it first: {node.id} = Size("{node.id}")',
            )
        if isinstance(node, ast.BinOp) and type(node.op) in _SIZE_OPS:
            a, b = self.size_value(node.left), self.size_value(node.right)
            if isinstance(node.op, ast.FloorDiv) and b == 0:
                raise AcrobatTypeError("division by zero in a size", self.span(node))
            return self.capped(_SIZE_OPS[type(node.op)](a, b), node, "an int", MAX_INT)
        raise AcrobatSyntaxError(
            "a size must be an int, a size name, or + - * // of them",
            self.span(node),
            hint="e.g. 3 * H",
        )

    def capped(self, value: int, node: ast.AST, what: str, limit: int = MAX_SIZE) -> int:
        """``value`` if it is within ``limit`` (either sign), else a ``SizeLimitError``."""
        if abs(value) > limit:
            raise SizeLimitError(
                f"{what} of {value:,} is over the largest acrobat accepts", self.span(node), limit
            )
        return value

    def tensor_type(self, dims: tuple[int, ...], node: ast.AST) -> TensorType:
        """``Tensor[dims]``, refused when a dimension is over ``MAX_SIZE`` or the tensor
        holds more than ``MAX_TENSOR_ELEMENTS``."""
        for d in dims:
            self.capped(d, node, "a dimension")
        elements = math.prod(dims)
        if elements > MAX_TENSOR_ELEMENTS:
            raise SizeLimitError(
                f"a tensor of shape {dims} holds {elements:,} elements, over the limit",
                self.span(node),
                limit=MAX_TENSOR_ELEMENTS,
            )
        return TensorType(dims)

    # -- types -----------------------------------------------------------------------
    def type_of(self, node: ast.expr | None, type_params: tuple[str, ...] = ()) -> Type:
        """The IR type an annotation denotes."""
        if node is None:
            raise AcrobatTypeError("missing type annotation")
        sp = self.span(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.type_of(self._reparse(node), type_params)
        if isinstance(node, ast.Constant) and node.value is None:
            return UNIT
        if isinstance(node, ast.Name):
            if node.id in SCALARS:
                return SCALARS[node.id]
            if node.id in type_params:
                return TypeParam(node.id)
            if node.id in self.adts:
                return AdtType(node.id)
            raise AcrobatNameError(
                f"unknown type {node.id!r}",
                sp,
                hint="types are Tensor[...], int, bool, float, tuple[...] or a declared ADT",
            )
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            head = node.value.id
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Tensor":
                if len(items) == 1 and isinstance(items[0], ast.Tuple) and not items[0].elts:
                    return TensorType(())
                dims = tuple(self.size_value(d) for d in items)
                if any(d < 1 for d in dims):
                    raise AcrobatTypeError(f"tensor dimensions must be positive, got {dims}", sp)
                return self.tensor_type(dims, node)
            if head == "tuple":
                if len(items) == 1 and isinstance(items[0], ast.Tuple) and not items[0].elts:
                    return UNIT
                return TupleType(tuple(self.type_of(i, type_params) for i in items))
            if head in self.adts:
                return AdtType(head, tuple(self.type_of(i, type_params) for i in items))
            raise AcrobatNameError(f"unknown generic type {head!r}", sp)
        raise AcrobatSyntaxError(
            f"cannot read this type annotation ({ast.unparse(node)})",
            sp,
            hint="use Tensor[H], int, bool, float, tuple[A, B] or an ADT name",
        )

    def _reparse(self, node: ast.Constant) -> ast.expr:
        try:
            inner = ast.parse(node.value, mode="eval").body
        except SyntaxError as err:
            raise AcrobatSyntaxError(
                f"bad type in string {node.value!r}: {err.msg}", self.span(node)
            ) from None
        for sub in ast.walk(inner):
            if hasattr(sub, "lineno"):
                sub.lineno, sub.col_offset = node.lineno, node.col_offset
        return inner


def read_declarations(tree: ast.Module, decl: Declarations, sizes: dict[str, int]) -> None:
    """Fill ``decl`` from the module's top-level statements (bodies are read later)."""
    unused = dict(sizes)
    body = tree.body
    if body and _is_docstring(body[0]):
        body = body[1:]
    for st in body:
        if isinstance(st, ast.Assign):
            _assign(st, decl, sizes, unused)
        elif isinstance(st, ast.AnnAssign):
            _param(st, decl)
        elif isinstance(st, ast.ClassDef):
            decl.declare(st.name, st)
            decl.adts[st.name] = AdtDef(st.name, _type_params(st, decl), (), span=decl.span(st))
        elif isinstance(st, ast.FunctionDef):
            decl.declare(st.name, st)
            decl.functions[st.name] = st
        else:
            raise unsupported(st, decl)
    if unused:
        raise UndeclaredSizeError(
            f"sizes {sorted(unused)} were given but the program declares no such size",
            names=tuple(sorted(unused)),
            hint=f"declared sizes: {sorted(decl.sizes) or 'none'}",
        )
    # constructor fields may name ADTs declared later, so read them in a second pass
    for st in body:
        if isinstance(st, ast.ClassDef):
            decl.adts[st.name] = _adt(st, decl)


def _is_docstring(st: ast.stmt) -> bool:
    return (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Constant)
        and isinstance(st.value.value, str)
    )


def _call_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def _assign(st: ast.Assign, decl: Declarations, sizes: dict[str, int], unused: dict) -> None:
    if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
        raise AcrobatSyntaxError(
            "module-level assignments declare one size, host constant or type variable",
            decl.span(st),
            hint='H = Size("H", 256), C = 16, F = 4 * H, EPS = 1e-3 or T = TypeVar("T")',
        )
    name = st.targets[0].id
    decl.declare(name, st)
    kind = _call_name(st.value)
    if kind == "TypeVar":
        decl.type_vars.add(name)
        return
    if kind == "Size":
        args = st.value.args
        if not args or not isinstance(args[0], ast.Constant) or args[0].value != name:
            raise AcrobatSyntaxError(
                f'write {name} = Size("{name}") (the name must repeat the variable)',
                decl.span(st),
            )
        default = decl.size_value(args[1]) if len(args) > 1 else None
        value = sizes.get(name, default)
        if value is None:
            raise AcrobatNameError(
                f"size {name!r} is not bound",
                decl.span(st),
                hint=f"pass sizes={{'{name}': ...}} or give a default: Size(\"{name}\", 256)",
            )
    else:
        const = host_constant(st.value)
        if const is not None and not (type(const) is int and const > 0):
            if name in sizes:
                raise AcrobatNameError(
                    f"{name} is a host constant, not a size: sizes={{...}} cannot bind it",
                    decl.span(st),
                    hint=f"change the value in the source, or make {name} a positive int size",
                )
            decl.consts[name] = const
            return
        value = sizes.get(name)
        if value is None:
            value = decl.size_value(st.value)
    unused.pop(name, None)
    if type(value) is not int or value < 1:
        raise AcrobatTypeError(f"size {name} must be a positive int, got {value!r}", decl.span(st))
    decl.sizes[name] = decl.capped(value, st, f"size {name}") if kind == "Size" else value


def host_constant(node: ast.expr) -> int | float | bool | None:
    """The value of an int/float/bool literal (possibly negated), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = host_constant(node.operand)
        return -inner if type(inner) in (int, float) else None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return node.value
    return None


def _param(st: ast.AnnAssign, decl: Declarations) -> None:
    ann = st.annotation
    if (
        not isinstance(st.target, ast.Name)
        or st.value is not None
        or not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name))
        or ann.value.id != "Param"
    ):
        raise AcrobatSyntaxError(
            "module-level annotations declare weights: NAME: Param[dims...] (no value)",
            decl.span(st),
            hint="weights are declared, never initialised in the source",
        )
    name = st.target.id
    decl.declare(name, st)
    items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    dims = tuple(decl.size_value(d) for d in items)
    if any(d < 1 for d in dims):
        raise AcrobatTypeError(f"weight {name} has a non-positive dimension {dims}", decl.span(st))
    ty = decl.tensor_type(dims, st)
    total = sum(math.prod(p.ty.shape) for p in decl.params.values()) + math.prod(dims)
    if total > MAX_WEIGHT_ELEMENTS:
        raise SizeLimitError(
            f"with {name}, the weights hold {total:,} elements, over the limit",
            decl.span(st),
            limit=MAX_WEIGHT_ELEMENTS,
        )
    decl.params[name] = ParamDef(name, ty, span=decl.span(st))


def _type_params(st: ast.ClassDef, decl: Declarations) -> tuple[str, ...]:
    if st.decorator_list or st.keywords or len(st.bases) != 1:
        raise AcrobatSyntaxError(
            f"declare ADTs as `class {st.name}(ADT):` (or ADT[T] for a generic one)",
            decl.span(st),
        )
    base = st.bases[0]
    if isinstance(base, ast.Name) and base.id == "ADT":
        return ()
    if (
        isinstance(base, ast.Subscript)
        and isinstance(base.value, ast.Name)
        and base.value.id == "ADT"
    ):
        items = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
        names = []
        for i in items:
            if not isinstance(i, ast.Name) or i.id not in decl.type_vars:
                raise AcrobatNameError(
                    "ADT type parameters must be declared type variables",
                    decl.span(i),
                    hint='T = TypeVar("T")',
                )
            names.append(i.id)
        return tuple(names)
    raise AcrobatSyntaxError(f"class {st.name} must derive from ADT", decl.span(st))


def _adt(st: ast.ClassDef, decl: Declarations) -> AdtDef:
    params = decl.adts[st.name].type_params
    ctors = []
    body = st.body[1:] if st.body and _is_docstring(st.body[0]) else st.body
    for item in body:
        if isinstance(item, ast.Pass):
            continue
        if (
            not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))
            or item.value
        ):
            raise AcrobatSyntaxError(
                f"ADT {st.name}: each line declares a constructor, e.g. `Leaf: (int,)`",
                decl.span(item),
            )
        name = item.target.id
        decl.declare(name, item)
        ann = item.annotation
        fields = ann.elts if isinstance(ann, ast.Tuple) else [ann]
        decl.ctors[name] = st.name
        ctors.append(CtorDef(name, tuple(decl.type_of(f, params) for f in fields)))
    if not ctors:
        raise AcrobatSyntaxError(f"ADT {st.name} has no constructors", decl.span(st))
    return AdtDef(st.name, params, tuple(ctors), span=decl.span(st))


_UNSUPPORTED = {
    ast.Import: ("import", "models are parsed, never executed: ops and types are built in"),
    ast.ImportFrom: ("import", "models are parsed, never executed: ops and types are built in"),
    ast.Global: ("global", "pass values as function arguments"),
    ast.Nonlocal: ("nonlocal", "pass values as function arguments"),
    ast.Lambda: ("lambda", "define a named function with `def`"),
    ast.For: ("module-level for loops", "loop in a function: for i in range(n): or for x in xs:"),
    ast.AsyncFunctionDef: ("async functions", None),
    ast.AsyncFor: ("async for", None),
    ast.AsyncWith: ("async with", None),
    ast.With: ("with", None),
    ast.Try: ("try", "errors are not part of the modelling language"),
    ast.Raise: ("raise", "errors are not part of the modelling language"),
    ast.Delete: ("del", None),
    ast.Assert: ("assert", None),
    ast.Attribute: (
        "attribute access",
        "take ADT values apart with match/case; call ops by their bare name, e.g. tanh(x)",
    ),
    ast.ListComp: ("list comprehensions", "use map(f, xs)"),
    ast.GeneratorExp: ("generator expressions", "use map(f, xs)"),
    ast.DictComp: ("dict comprehensions", None),
    ast.SetComp: ("set comprehensions", None),
    ast.Dict: ("dicts", None),
    ast.Set: ("sets", None),
    ast.List: ("list literals", "build lists with Cons(x, xs) and Nil()"),
    ast.JoinedStr: ("f-strings", None),
    ast.Yield: ("yield", None),
    ast.YieldFrom: ("yield", None),
    ast.Await: ("await", None),
    ast.NamedExpr: ("the := operator", None),
    ast.Starred: ("starred arguments", None),
    ast.Expr: ("expression statements", "only phase() may stand alone as a statement"),
}


def unsupported(node: ast.AST, decl: Declarations, what: str | None = None) -> AcrobatSyntaxError:
    """The error for a construct outside the modelling language."""
    name, hint = _UNSUPPORTED.get(type(node), (type(node).__name__, None))
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        name, hint = "try", "errors are not part of the modelling language"
    return AcrobatSyntaxError(
        f"{what or name} is not supported in the modelling language", decl.span(node), hint
    )
