"""The deterministic text form of IR modules; :mod:`acrobat.ir.parser` reads it back.

``parse_module(print_module(m)) == m`` for every type-checked module ``m``. The format::

    # acrobat IR
    size H = 8
    param W: Tensor[24, 8]
    adt List[T] {
      Nil()
      Cons(T, List[T])
    }
    def @f(%xs: List[Tensor[8]]) -> Tensor[24] {
      let %x: Tensor[8] = zeros(shape=(8,));
      dense(%x, $W)
    }

Sigils keep the name spaces apart: ``%`` variables, ``$`` parameters, ``@`` functions;
a name that is not ``[A-Za-z0-9_]+`` is written as a quoted string after its sigil.
Types are written only where a variable is bound, plus two cases inference cannot
recover: tensor constants other than 0-d float32 (``tensor(3: Tensor[; int32])``) and
constructors whose fields do not mention every type parameter (``Nil[Tensor[8]]()``).
Long ``let`` blocks are printed with a loop; only nesting depth recurses.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any

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
    PWild,
    TupleExpr,
    Var,
)
from acrobat.ir.types import (
    AdtType,
    FuncType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
    TypeParam,
)

HEADER = "# acrobat IR"
INDENT = "  "
_BARE_NAME = re.compile(r"[A-Za-z0-9_]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def print_type(t: Type) -> str:
    """The text of a type: ``Tensor[8, 4]``, ``Tensor[; int32]``, ``(int,)``, ``List[T]``..."""
    if isinstance(t, TensorType):
        dims = ", ".join(str(d) for d in t.shape)
        return f"Tensor[{dims}]" if t.dtype == "float32" else f"Tensor[{dims}; {t.dtype}]"
    if isinstance(t, ScalarType | TypeParam):
        return str(t)
    if isinstance(t, TupleType):
        inner = ", ".join(print_type(f) for f in t.fields)
        return f"({inner},)" if len(t.fields) == 1 else f"({inner})"
    if isinstance(t, AdtType):
        if not t.args:
            return t.name
        return f"{t.name}[" + ", ".join(print_type(a) for a in t.args) + "]"
    if isinstance(t, FuncType):
        params = ", ".join(print_type(p) for p in t.params)
        return f"fn({params}) -> {print_type(t.ret)}"
    raise TypeError(f"cannot print type {t!r}")


def print_name(sigil: str, name: str) -> str:
    """``%x`` / ``$W`` / ``@f``, quoting names that are not plain identifiers."""
    return sigil + (name if _BARE_NAME.fullmatch(name) else json.dumps(name))


def print_literal(v: Any) -> str:
    """An attribute value or host literal: ints, floats (``repr``), bools, none, strings, tuples."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return _float(float(v))
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, tuple):
        inner = ", ".join(print_literal(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    raise TypeError(f"cannot print literal {v!r}")


def _float(v: float) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "nan" if math.isnan(v) else repr(v)


def print_expr(e: Expr, indent: int = 0, module: Module | None = None) -> str:
    """The text of one expression; lines after the first are indented ``indent`` levels.

    ``module`` (optional) says which constructors need their type arguments written;
    without it, nullary constructors of generic ADTs get them.
    """
    return _Printer(module).expr(e, indent)


def print_module(m: Module) -> str:
    """The canonical text of a module, ending with a newline."""
    p = _Printer(m)
    lines = [HEADER]
    if m.entry != "main":
        lines.append("entry " + print_name("@", m.entry))
    lines.extend(f"size {name} = {value}" for name, value in m.sizes)
    lines.extend(f"param {_decl_name(d.name)}: {print_type(d.ty)}" for d in m.params)
    for a in m.adts:
        params = f"[{', '.join(a.type_params)}]" if a.type_params else ""
        lines.append(f"adt {a.name}{params} {{")
        for c in a.ctors:
            lines.append(f"{INDENT}{c.name}({', '.join(print_type(f) for f in c.fields)})")
        lines.append("}")
    for f in m.functions:
        params = ", ".join(p.binder(v) for v in f.params)
        keyword = "kernel" if f.is_kernel else "def"
        lines.append(f"{keyword} {print_name('@', f.name)}({params}) -> {print_type(f.ret)} {{")
        lines.extend(p.block(f.body, 1))
        lines.append("}")
    return "\n".join(lines) + "\n"


class _Printer:
    """Prints expressions; knows the module's constructors when one is given."""

    def __init__(self, module: Module | None):
        self.module = module

    def binder(self, v: Var) -> str:
        """``%x: T`` (or ``%x`` when the type is not known yet)."""
        name = print_name("%", v.name)
        return name if v.ty is None else f"{name}: {print_type(v.ty)}"

    def block(self, e: Expr, indent: int) -> list[str]:
        """The lines of a block body: ``let`` lines, then the result expression."""
        if isinstance(e, Let) and e.bindings:
            return self.block_lines(e, indent)
        return [INDENT * indent + self.expr(e, indent)]

    def block_lines(self, e: Let, indent: int) -> list[str]:
        """Every binding of ``e`` on its own line, then its body (a loop, not recursion)."""
        pad = INDENT * indent
        lines = [
            f"{pad}let {self.binder(b.var)} = {self.expr(b.value, indent)};" for b in e.bindings
        ]
        lines.append(pad + self.expr(e.body, indent))
        return lines

    def expr(self, e: Expr, indent: int) -> str:
        """One expression; nested blocks are indented below ``indent``."""
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise TypeError(f"cannot print {e!r}")
        return method(e, indent)

    def args(self, es: tuple[Expr, ...], indent: int) -> str:
        """Comma-separated expressions."""
        return ", ".join(self.expr(a, indent) for a in es)

    def _Var(self, e: Var, indent: int) -> str:
        return print_name("%", e.name)

    def _ParamRef(self, e: ParamRef, indent: int) -> str:
        return print_name("$", e.name)

    def _GlobalRef(self, e: GlobalRef, indent: int) -> str:
        return print_name("@", e.name)

    def _Const(self, e: Const, indent: int) -> str:
        t = e.ty
        if isinstance(t, TensorType):
            value = _scalar_text(e.value, "float" if t.dtype.startswith("float") else "int")
            typed = "" if t == TensorType(()) else ": " + print_type(t)
            return f"tensor({value}{typed})"
        kind = t.kind if isinstance(t, ScalarType) else None
        return _scalar_text(e.value, kind)

    def _OpCall(self, e: OpCall, indent: int) -> str:
        parts = [self.expr(a, indent) for a in e.args]
        parts.extend(f"{k}={print_literal(v)}" for k, v in e.attrs)
        return f"{e.op}({', '.join(parts)})"

    def _FnCall(self, e: FnCall, indent: int) -> str:
        return f"{print_name('@', e.fn)}({self.args(e.args, indent)})"

    def _KernelCall(self, e: KernelCall, indent: int) -> str:
        call = f"{print_name('@', e.kernel)}({self.args(e.args, indent)})"
        return call if e.depth is None else f"hoist({e.depth}) {call}"

    def _CtorCall(self, e: CtorCall, indent: int) -> str:
        targs = ""
        if self.needs_type_args(e):
            targs = "[" + ", ".join(print_type(a) for a in e.ty.args) + "]"
        return f"{e.ctor}{targs}({self.args(e.args, indent)})"

    def needs_type_args(self, e: CtorCall) -> bool:
        """True when inference could not recover ``e``'s type arguments from its fields."""
        if not isinstance(e.ty, AdtType) or not e.ty.args:
            return False
        if self.module is None or e.ctor not in self.module.ctor_map:
            return not e.args
        adt, tag = self.module.ctor_map[e.ctor]
        mentioned = _type_params_in(adt.ctors[tag].fields)
        return not set(adt.type_params) <= mentioned

    def _TupleExpr(self, e: TupleExpr, indent: int) -> str:
        inner = self.args(e.fields, indent)
        return f"({inner},)" if len(e.fields) == 1 else f"({inner})"

    def _Proj(self, e: Proj, indent: int) -> str:
        return f"{self.expr(e.tup, indent)}.{e.index}"

    def _Let(self, e: Let, indent: int) -> str:
        return self.braced(self.block_lines(e, indent + 1), indent)

    def braced(self, lines: list[str], indent: int) -> str:
        """``{``, the given lines, then ``}`` at ``indent``."""
        return "{\n" + "\n".join(lines) + "\n" + INDENT * indent + "}"

    def _If(self, e: If, indent: int) -> str:
        then = self.braced(self.block(e.then, indent + 1), indent)
        orelse = self.braced(self.block(e.orelse, indent + 1), indent)
        return f"if ({self.expr(e.cond, indent)}) {then} else {orelse}"

    def _Match(self, e: Match, indent: int) -> str:
        pad = INDENT * (indent + 1)
        lines = []
        for c in e.clauses:
            body = self.braced(self.block(c.body, indent + 2), indent + 1)
            lines.append(f"{pad}case {self.pattern(c.pattern)} => {body}")
        return f"match ({self.expr(e.scrutinee, indent)}) " + self.braced(lines, indent)

    def pattern(self, p: Pattern) -> str:
        """``_``, ``%x: T`` or ``Ctor(p, ...)``."""
        if isinstance(p, PWild):
            return "_"
        if isinstance(p, PVar):
            return self.binder(p.var)
        if isinstance(p, PCtor):
            return f"{p.ctor}({', '.join(self.pattern(q) for q in p.fields)})"
        raise TypeError(f"cannot print pattern {p!r}")

    def _Parallel(self, e: Parallel, indent: int) -> str:
        return f"parallel({self.args(e.calls, indent)})"

    def _Map(self, e: Map, indent: int) -> str:
        rest = "".join(", " + self.expr(a, indent) for a in (e.xs, *e.extra))
        return f"map({print_name('@', e.fn)}{rest})"

    def _Phase(self, e: Phase, indent: int) -> str:
        return "phase()"


def _decl_name(name: str) -> str:
    """A declared parameter name: bare, or quoted when it is not a plain identifier."""
    return name if _IDENT.fullmatch(name) else json.dumps(name)


def _scalar_text(v: Any, kind: str | None) -> str:
    """A scalar written as ``kind`` (float/int/bool) so that it reads back equal to ``v``."""
    if kind == "float":
        return _float(float(v))
    if kind == "int" and (isinstance(v, int) or float(v).is_integer()):
        return str(int(v))
    if kind == "bool":
        return "true" if v else "false"
    return print_literal(v)


def _type_params_in(types: tuple[Type, ...]) -> set[str]:
    """Names of the type parameters occurring in ``types``."""
    found: set[str] = set()
    stack = list(types)
    while stack:
        t = stack.pop()
        if isinstance(t, TypeParam):
            found.add(t.name)
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, AdtType):
            stack.extend(t.args)
        elif isinstance(t, FuncType):
            stack.extend((*t.params, t.ret))
    return found
