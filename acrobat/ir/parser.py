"""Reads the text form written by :mod:`acrobat.ir.printer` back into a type-checked module.

A hand-written tokenizer, a bracket-balance check, then recursive descent. Function
bodies are parsed after every declaration has been read, so a body may use constructors
of ADTs declared below it; ADT names are collected up front so ADTs may refer to each
other. Nesting depth recurses, but a ``let`` block of any length is read with a loop.
Errors raise :class:`~acrobat.errors.IRParseError` located at ``file:line:col``;
``parse_module`` ends with :func:`~acrobat.ir.typecheck.infer_module`, whose typed
errors (an unknown op, a shape mismatch) pass through.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from acrobat.errors import IRParseError, Span
from acrobat.ir.nodes import (
    FN,
    KERNEL,
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
    KernelCall,
    Let,
    Map,
    Match,
    Module,
    OpCall,
    Parallel,
    ParamDef,
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
from acrobat.ir.typecheck import infer_module
from acrobat.ir.types import (
    DTYPES,
    AdtType,
    FuncType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
    TypeParam,
)

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r]+) | (?P<newline>\n) | (?P<comment>\#[^\n]*)
    | (?P<sigil>[%$@])(?:(?P<bare>[A-Za-z0-9_]+)|(?P<quoted>"(?:[^"\\\n]|\\.)*"))
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    | (?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<proj>\.[0-9]+)
    | (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<punct>=>|->|[{}()\[\],;:=-])
    """,
    re.VERBOSE,
)
_SIGIL_KIND = {"%": "var", "$": "param", "@": "global"}
_OPENERS = {"{": "}", "(": ")", "[": "]"}
_CLOSERS = {close: open_ for open_, close in _OPENERS.items()}
_SCALARS = {"int", "bool", "float"}
_FLOAT_WORDS = {"inf": float("inf"), "nan": float("nan")}
_FORMAT_HINT = "see the text format in acrobat/ir/printer.py"


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` is a punctuation string or name/var/param/global/int/float/
    str/proj/eof; ``value`` is the decoded name, number or string."""

    kind: str
    value: Any
    line: int
    col: int

    def describe(self) -> str:
        """How error messages name this token."""
        if self.kind == "eof":
            return "the end of the text"
        if self.kind == "proj":
            return f"'.{self.value}'"
        if self.kind in ("int", "float", "str", *_SIGIL_KIND.values()):
            return f"{self.kind} {self.value!r}"
        return repr(self.value)


def parse_module(text: str, filename: str = "<ir>") -> Module:
    """Parse a printed module and type-check it (``parse_module(print_module(m)) == m``)."""
    tokens = tokenize(text, filename)
    closing = match_brackets(tokens, filename)
    parser = _Parser(tokens, closing, filename, adts=_adt_names(tokens), ctors={})
    return infer_module(parser.module())


def parse_expr(text: str, module: Module | None = None, filename: str = "<ir>") -> Expr:
    """Parse one expression, untyped except where the text writes types.

    ``module`` supplies the ADT and constructor names the expression may use.
    """
    tokens = tokenize(text, filename)
    closing = match_brackets(tokens, filename)
    adts = set(module.adt_map) if module else set()
    ctors = {c: adt.name for c, (adt, _) in module.ctor_map.items()} if module else {}
    parser = _Parser(tokens, closing, filename, adts=adts, ctors=ctors)
    e = parser.expr()
    parser.expect("eof", hint="one expression only")
    return e


def tokenize(text: str, filename: str = "<ir>") -> list[Token]:
    """The tokens of ``text``, ending with an ``eof`` token; comments and spaces dropped."""
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise IRParseError(
                f"unexpected character {text[pos]!r}",
                Span(filename, line, pos - line_start),
                "IR text has %var, $param, @function, names, numbers, strings and {}()[],;:=",
            )
        tok = _token(m, line, pos - line_start)
        if tok is not None:
            tokens.append(tok)
        elif m.lastgroup == "newline":
            line, line_start = line + 1, m.end()
        pos = m.end()
    tokens.append(Token("eof", None, line, pos - line_start))
    return tokens


def _token(m: re.Match, line: int, col: int) -> Token | None:
    """The token a regex match stands for (None for spaces, newlines and comments)."""
    group = m.lastgroup
    text = m.group()
    if group in ("space", "newline", "comment"):
        return None
    if m.group("sigil"):
        name = m.group("bare") or json.loads(m.group("quoted"))
        return Token(_SIGIL_KIND[m.group("sigil")], name, line, col)
    if group == "number":
        is_float = any(c in text for c in ".eE")
        return Token("float" if is_float else "int", (float if is_float else int)(text), line, col)
    if group == "proj":
        return Token("proj", int(text[1:]), line, col)
    if group == "string":
        return Token("str", json.loads(text), line, col)
    if group == "name":
        return Token("name", text, line, col)
    return Token(text, text, line, col)


def match_brackets(tokens: list[Token], filename: str = "<ir>") -> dict[int, int]:
    """Index of each opening bracket -> index of its closing one; unbalanced text raises."""
    stack: list[int] = []
    closing: dict[int, int] = {}
    for i, tok in enumerate(tokens):
        if tok.kind in _OPENERS:
            stack.append(i)
        elif tok.kind in _CLOSERS:
            if not stack or tokens[stack[-1]].kind != _CLOSERS[tok.kind]:
                raise _unmatched(tok, tokens[stack[-1]] if stack else None, filename)
            closing[stack.pop()] = i
    if stack:
        tok = tokens[stack[-1]]
        raise IRParseError(
            f"{tok.value!r} is never closed",
            Span(filename, tok.line, tok.col),
            f"add the matching {_OPENERS[tok.kind]!r}",
        )
    return closing


def _unmatched(tok: Token, opener: Token | None, filename: str) -> IRParseError:
    """The error for a closing bracket that does not close the innermost open one."""
    where = Span(filename, tok.line, tok.col)
    if opener is None:
        return IRParseError(f"unmatched {tok.value!r}", where, "remove it or add its opener")
    return IRParseError(
        f"{tok.value!r} does not close the {opener.value!r} opened at line {opener.line}",
        where,
        "check that brackets and braces are balanced",
    )


def _adt_names(tokens: list[Token]) -> set[str]:
    """Names declared by top-level ``adt`` lines (so ADTs can refer to later ones)."""
    names, depth = set(), 0
    for tok, nxt in itertools.pairwise(tokens):
        depth += tok.kind in _OPENERS
        depth -= tok.kind in _CLOSERS
        if depth == 0 and tok.kind == "name" and tok.value == "adt" and nxt.kind == "name":
            names.add(nxt.value)
    return names


class _Parser:
    """Recursive descent over a token list; ``closing`` maps brackets to their partners."""

    def __init__(self, tokens, closing, filename, adts: set[str], ctors: dict[str, str]):
        self.toks = tokens
        self.closing = closing
        self.pos = 0
        self.file = filename
        self.adt_names = adts
        self.ctors = ctors
        self.type_params: tuple[str, ...] = ()
        self.kernels: set[str] = set()

    # -- token helpers ------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.toks[min(self.pos + ahead, len(self.toks) - 1)]

    def at(self, kind: str, value: Any = None, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == kind and (value is None or tok.value == value)

    def take(self) -> Token:
        tok = self.peek()
        self.pos += tok.kind != "eof"
        return tok

    def accept(self, kind: str, value: Any = None) -> bool:
        if self.at(kind, value):
            self.take()
            return True
        return False

    def expect(self, kind: str, value: Any = None, what: str = "", hint: str = "") -> Token:
        if not self.at(kind, value):
            want = what or (repr(value) if value is not None else _describe_kind(kind))
            raise self.error(self.peek(), f"expected {want}, found {self.peek().describe()}", hint)
        return self.take()

    def span(self, tok: Token) -> Span:
        return Span(self.file, tok.line, tok.col)

    def error(self, tok: Token, message: str, hint: str = "") -> IRParseError:
        return IRParseError(message, self.span(tok), hint or _FORMAT_HINT)

    def comma_list(self, item, close: str) -> list:
        """``item (, item)* [,]`` up to (and consuming) the ``close`` bracket."""
        out = []
        while not self.accept(close):
            out.append(item())
            if not self.at(close):
                self.expect(",", what=f"',' or {close!r}")
        return out

    def parenthesized(self, item) -> tuple[list, bool]:
        """``(item, ...)``: the items, and whether they form a tuple (a comma, or none)."""
        self.expect("(")
        items, comma = [], False
        while not self.accept(")"):
            items.append(item())
            if not self.at(")"):
                self.expect(",", what="',' or ')'")
                comma = True
        return items, comma or not items

    # -- declarations -------------------------------------------------------------
    def module(self) -> Module:
        """The whole text: declarations in any order, function bodies parsed last."""
        decls: dict[str, list] = {
            "size": [],
            "param": [],
            "adt": [],
            "def": [],
            "entry": [],
        }
        while not self.at("eof"):
            tok = self.expect("name", what="a declaration (size, param, adt, def, kernel, entry)")
            kind = "def" if tok.value == "kernel" else tok.value
            if kind not in decls:
                raise self.error(
                    tok,
                    f"unknown declaration {tok.value!r}",
                    "use size, param, adt, def, kernel or entry",
                )
            decls[kind].append(getattr(self, "decl_" + kind)(tok))
        self.kernels = {sig[1] for sig in decls["def"] if sig[0].value == "kernel"}
        functions = tuple(self.function_body(*sig) for sig in decls["def"])
        entry = decls["entry"][-1] if decls["entry"] else "main"
        return Module(
            tuple(decls["size"]), tuple(decls["param"]), tuple(decls["adt"]), functions, entry
        )

    def decl_size(self, tok: Token) -> tuple[str, int]:
        """``size H = 8``."""
        name = self.expect("name", what="a size name").value
        self.expect("=")
        return name, self.expect("int", what="an integer size").value

    def decl_param(self, tok: Token) -> ParamDef:
        """``param W: Tensor[24, 8]``."""
        name = self.expect_name("a parameter name")
        self.expect(":")
        ty_tok = self.peek()
        ty = self.type_()
        if not isinstance(ty, TensorType):
            raise self.error(ty_tok, f"parameter {name!r} must be a tensor, not {ty}")
        return ParamDef(name, ty, span=self.span(tok))

    def expect_name(self, what: str) -> str:
        """A declared name: bare, quoted, or with the ``$`` sigil of its uses."""
        if self.at("str") or self.at("param"):
            return self.take().value
        return self.expect("name", what=what).value

    def decl_entry(self, tok: Token) -> str:
        """``entry @f`` (only written when the entry is not ``main``)."""
        return self.expect("global", what="the entry function, like @main").value

    def decl_adt(self, tok: Token) -> AdtDef:
        """``adt Name[T, ...] { Ctor(T1, T2) ... }``; type parameters are in scope inside."""
        name = self.expect("name", what="an ADT name").value
        params: list[str] = []
        if self.accept("["):
            params = self.comma_list(
                lambda: self.expect("name", what="a type parameter").value, "]"
            )
        self.expect("{")
        self.type_params = tuple(params)
        ctors = []
        while not self.accept("}"):
            ctor = self.expect("name", what="a constructor name or '}'").value
            self.expect("(")
            ctors.append(CtorDef(ctor, tuple(self.comma_list(self.type_, ")"))))
            self.ctors[ctor] = name
        self.type_params = ()
        return AdtDef(name, tuple(params), tuple(ctors), span=self.span(tok))

    def decl_def(self, tok: Token) -> tuple[Token, str, tuple[Var, ...], Type, int]:
        """The signature; the body's position is kept and its tokens skipped for now."""
        name = self.expect("global", what="a function name like @f").value
        self.expect("(")
        params = tuple(self.comma_list(lambda: self.binder(typed=True), ")"))
        self.expect("->")
        ret = self.type_()
        body_at = self.pos
        self.expect("{", hint="a function body is a block in braces")
        self.pos = self.closing[body_at] + 1
        return tok, name, params, ret, body_at

    def function_body(self, tok, name, params, ret, body_at) -> Function:
        """The function whose signature :meth:`decl_def` read, body parsed now."""
        self.pos = body_at
        kind = KERNEL if tok.value == "kernel" else FN
        return Function(name, params, ret, self.block(), kind, span=self.span(tok))

    def binder(self, typed: bool = False) -> Var:
        """``%x: T``; the type may be left out unless ``typed``."""
        tok = self.expect("var", what="a variable like %x")
        ty = None
        if typed or self.at(":"):
            self.expect(":", hint="function parameters need a type, e.g. %x: Tensor[8]")
            ty = self.type_()
        return Var(tok.value, ty=ty, span=self.span(tok))

    # -- types ----------------------------------------------------------------------
    def type_(self) -> Type:
        """A type: tensors, scalars, tuples, ADTs, type parameters, ``fn(..) -> T``."""
        if self.at("("):
            fields, is_tuple = self.parenthesized(self.type_)
            return TupleType(tuple(fields)) if is_tuple else fields[0]
        tok = self.take()
        if tok.kind != "name":
            raise self.error(tok, f"expected a type, found {tok.describe()}")
        if tok.value == "Tensor":
            return self.tensor_type()
        if tok.value in _SCALARS:
            return ScalarType(tok.value)
        if tok.value == "fn":
            self.expect("(")
            params = tuple(self.comma_list(self.type_, ")"))
            self.expect("->")
            return FuncType(params, self.type_())
        if tok.value in self.type_params:
            return TypeParam(tok.value)
        if tok.value in self.adt_names:
            args = self.comma_list(self.type_, "]") if self.accept("[") else []
            return AdtType(tok.value, tuple(args))
        raise self.error(
            tok,
            f"unknown type name {tok.value!r}",
            "types are Tensor[...], int, bool, float, (tuples), fn(...) -> T or a declared adt",
        )

    def tensor_type(self) -> TensorType:
        """The ``[d1, d2; dtype]`` after ``Tensor``."""
        self.expect("[", hint="tensor types are written Tensor[d1, d2] or Tensor[d; int32]")
        dims: list[int] = []
        while not self.at("]") and not self.at(";"):
            dims.append(self.expect("int", what="a dimension").value)
            if not self.at("]") and not self.at(";"):
                self.expect(",", what="',', ';' or ']'")
        dtype = "float32"
        if self.accept(";"):
            tok = self.expect("name", what="a dtype")
            if tok.value not in DTYPES:
                raise self.error(tok, f"unknown dtype {tok.value!r}", f"use one of {DTYPES}")
            dtype = tok.value
        self.expect("]")
        return TensorType(tuple(dims), dtype)

    # -- blocks and expressions -------------------------------------------------
    def block(self) -> Expr:
        """``{ let ...; result }``: a Let when there are bindings, else the result itself."""
        bindings, body, span = self.block_parts()
        return Let(bindings, body, span=span) if bindings else body

    def block_parts(self) -> tuple[tuple[Binding, ...], Expr, Span]:
        """The bindings, result and position of a braced block (a loop over the lets)."""
        span = self.span(self.expect("{"))
        bindings = []
        while self.at("name", "let"):
            self.take()
            var = self.binder()
            self.expect("=")
            value = self.expr()
            self.expect(";", hint="each let binding ends with ';'")
            bindings.append(Binding(var, value))
        body = self.expr()
        self.expect("}", hint="a block is let bindings followed by one result expression")
        return tuple(bindings), body, span

    def expr(self) -> Expr:
        """A primary expression followed by any number of ``.N`` projections."""
        e = self.primary()
        while self.at("proj"):
            tok = self.take()
            e = Proj(e, tok.value, span=self.span(tok))
        return e

    def primary(self) -> Expr:
        """An expression without trailing projections."""
        tok = self.peek()
        span = self.span(tok)
        if tok.kind in _SIGIL_KIND.values():
            return self.sigil_expr(self.take(), span)
        if tok.kind in ("int", "float", "-"):
            return Const(self.number(), span=span)
        if tok.kind == "(":
            return self.paren_expr(span)
        if tok.kind == "{":
            bindings, body, _ = self.block_parts()
            return Let(bindings, body, span=span)
        if tok.kind == "name":
            return self.named_expr(self.take(), span)
        raise self.error(tok, f"expected an expression, found {tok.describe()}")

    def sigil_expr(self, tok: Token, span: Span) -> Expr:
        """``%x``, ``$W``, ``@f`` or the call ``@f(args)``."""
        if tok.kind == "var":
            return Var(tok.value, span=span)
        if tok.kind == "param":
            return ParamRef(tok.value, span=span)
        if self.accept("("):
            args = tuple(self.comma_list(self.expr, ")"))
            if tok.value in self.kernels:
                return KernelCall(tok.value, args, span=span)
            return FnCall(tok.value, args, span=span)
        return GlobalRef(tok.value, span=span)

    def kw_hoist(self, span: Span) -> KernelCall:
        """``hoist(3) @k(args)``: a kernel call at static depth 3."""
        self.expect("(")
        depth = self.expect("int", what="a static depth").value
        self.expect(")")
        tok = self.expect("global", what="a kernel like @k")
        call = self.sigil_expr(tok, self.span(tok))
        if not isinstance(call, KernelCall):
            raise self.error(tok, f"{tok.value!r} is not a kernel", "hoist(...) applies to kernels")
        return KernelCall(call.kernel, call.args, depth, span=span)

    def paren_expr(self, span: Span) -> Expr:
        """``()``, ``(e)`` (grouping), ``(e,)`` or ``(e1, e2, ...)``."""
        fields, is_tuple = self.parenthesized(self.expr)
        return TupleExpr(tuple(fields), span=span) if is_tuple else fields[0]

    def named_expr(self, tok: Token, span: Span) -> Expr:
        """A literal word, a keyword form, a constructor call or an op call."""
        word = tok.value
        if word in ("true", "false"):
            return Const(word == "true", span=span)
        if word in _FLOAT_WORDS:
            return Const(_FLOAT_WORDS[word], span=span)
        special = getattr(self, f"kw_{word}", None)
        if special is not None:
            return special(span)
        if word in self.ctors:
            return self.ctor_call(word, span)
        self.expect("(", hint=f"ops are called as {word}(args, attr=value); variables need %")
        return self.op_call(word, span)

    def ctor_call(self, ctor: str, span: Span) -> CtorCall:
        """``Ctor(args)`` or, with explicit type arguments, ``Ctor[T, ...](args)``."""
        ty = None
        if self.accept("["):
            args = self.comma_list(self.type_, "]")
            ty = AdtType(self.ctors[ctor], tuple(args))
        self.expect("(")
        return CtorCall(ctor, tuple(self.comma_list(self.expr, ")")), ty=ty, span=span)

    def op_call(self, op: str, span: Span) -> OpCall:
        """The ``(args, attr=value, ...)`` of an op call; attributes keep their order."""
        args: list[Expr] = []
        attrs: list[tuple[str, Any]] = []
        while not self.accept(")"):
            if self.at("name") and self.at("=", ahead=1):
                key = self.take().value
                self.take()
                attrs.append((key, self.literal()))
            elif attrs:
                raise self.error(self.peek(), "positional argument after an attribute")
            else:
                args.append(self.expr())
            if not self.at(")"):
                self.expect(",", what="',' or ')'")
        return OpCall(op, tuple(args), tuple(attrs), span=span)

    def kw_if(self, span: Span) -> If:
        """``if (c) { ... } else { ... }``."""
        cond = self.expr()
        then = self.block()
        self.expect("name", "else", hint="if needs both branches: if (c) { ... } else { ... }")
        return If(cond, then, self.block(), span=span)

    def kw_match(self, span: Span) -> Match:
        """``match (e) { case P => { ... } ... }``."""
        scrutinee = self.expr()
        self.expect("{")
        clauses = []
        while not self.accept("}"):
            tok = self.expect("name", "case", what="'case' or '}'")
            pattern = self.pattern()
            self.expect("=>")
            clauses.append(Clause(pattern, self.block(), span=self.span(tok)))
        return Match(scrutinee, tuple(clauses), span=span)

    def pattern(self) -> Pattern:
        """``_``, ``%x[: T]`` or ``Ctor(p, ...)``."""
        if self.at("var"):
            return PVar(self.binder())
        tok = self.expect("name", what="a pattern (_, %x: T or Ctor(...))")
        if tok.value == "_":
            return PWild()
        self.expect("(", hint="constructor patterns list their fields: Ctor(_, %x: T)")
        return PCtor(tok.value, tuple(self.comma_list(self.pattern, ")")))

    def kw_parallel(self, span: Span) -> Parallel:
        """``parallel(@f(a), @g(b))``."""
        self.expect("(")
        return Parallel(tuple(self.comma_list(self.expr, ")")), span=span)

    def kw_map(self, span: Span) -> Map:
        """``map(@f, xs, extra...)``."""
        self.expect("(")
        fn = self.expect("global", what="the mapped function, like @f").value
        self.expect(",", hint="map(@f, xs, extra...)")
        xs, *extra = self.comma_list(self.expr, ")")
        return Map(fn, xs, tuple(extra), span=span)

    def kw_phase(self, span: Span) -> Phase:
        """``phase()``."""
        self.expect("(")
        self.expect(")", hint="phase() takes no arguments")
        return Phase(span=span)

    def kw_tensor(self, span: Span) -> Const:
        """``tensor(0.5)`` or ``tensor(3: Tensor[; int32])``."""
        self.expect("(")
        value = self.number()
        ty = TensorType(())
        if self.accept(":"):
            tok = self.peek()
            ty = self.type_()
            if not isinstance(ty, TensorType):
                raise self.error(tok, f"a tensor constant needs a tensor type, not {ty}")
        self.expect(")")
        return Const(value, ty=ty, span=span)

    # -- literals -------------------------------------------------------------------
    def number(self) -> int | float | bool:
        """An optionally negative int or float (``inf``/``nan`` included), or a bool."""
        sign = -1 if self.accept("-") else 1
        tok = self.take()
        if tok.kind in ("int", "float"):
            return sign * tok.value
        if tok.kind == "name" and tok.value in _FLOAT_WORDS:
            return sign * _FLOAT_WORDS[tok.value]
        if sign == 1 and tok.kind == "name" and tok.value in ("true", "false"):
            return tok.value == "true"
        raise self.error(tok, f"expected a number, found {tok.describe()}")

    def literal(self) -> Any:
        """An attribute value: number, bool, none, string or a tuple of those."""
        tok = self.peek()
        if tok.kind == "(":
            items, is_tuple = self.parenthesized(self.literal)
            return tuple(items) if is_tuple else items[0]
        if tok.kind == "str":
            return self.take().value
        if tok.kind == "name" and tok.value == "none":
            self.take()
            return None
        return self.number()


def _describe_kind(kind: str) -> str:
    names = {"name": "a name", "var": "a variable", "param": "a parameter", "global": "a function"}
    names.update({"int": "an integer", "eof": "the end of the text"})
    return names.get(kind, repr(kind))
