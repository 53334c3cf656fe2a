"""The modelling language: a typed subset of Python, parsed with ``ast``, never executed.

A complete binary TreeLSTM (Tai et al.) reads::

    H = Size("H", 256)                 # sizes are bound at parse time: parse(src, sizes={"H": 512})
    V = Size("V", 1000)
    E: Param[V, H]                     # weights: declared here, given values at run time
    W_iou: Param[3 * H, H]
    b_iou: Param[3 * H]
    U: Param[5 * H, 2 * H]
    b_U: Param[5 * H]

    class Tree(ADT):
        Leaf: (int,)                   # a word id
        Node: (Tree, Tree)

    def cell(t: Tree) -> tuple[Tensor[H], Tensor[H]]:
        match t:
            case Leaf(word):
                i, o, u = split(dense(embed(E, word), W_iou, b_iou), 3)
                c = sigmoid(i) * tanh(u)
                return sigmoid(o) * tanh(c), c
            case Node(left, right):
                (hl, cl), (hr, cr) = parallel(cell(left), cell(right))
                i, o, u, fl, fr = split(dense(concat(hl, hr), U, b_U), 5)
                c = sigmoid(i) * tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr
                return sigmoid(o) * tanh(c), c

    def main(t: Tree) -> Tensor[H]:
        h, c = cell(t)
        return h

What the language has:

* **Sizes** ``H = Size("H", default)``, constants ``C = 16`` and derived sizes ``F = 4 * H``
  (positive ints; ``sizes={...}`` overrides them).
* **Host constants**: any other literal, ``BOS = 0``, ``SCALE = -0.5``, ``EPS = 1e-3``,
  ``DEBUG = False``: a value in expressions and op attributes, never a dimension.
* **Weights** ``NAME: Param[d0, d1, ...]``.
* **ADTs** ``class Tree(ADT):`` with one ``Ctor: (field types...)`` line per constructor;
  generic ones over ``T = TypeVar("T")`` as ``class Pair(ADT[T]):``. ``List[T]`` (``Nil()``,
  ``Cons(x, xs)``) and ``Option[T]`` (``Nothing()``, ``Some(x)``) are built in.
* **Functions** with annotated parameters and result; recursion and mutual recursion.
  *Generic* ones name type variables in their signature, ``def length(xs: List[T]) -> int``
  with ``T = TypeVar("T")``: each call with new argument types makes a copy of the function
  for those types (``length__1``, ...; see :mod:`acrobat.frontend.generics`). ``main`` has
  concrete types, and a generic function's body annotates with concrete types only.
* **Types** ``Tensor[H]``, ``Tensor[H, H]``, ``int``, ``bool``, ``float``, ``tuple[A, B]``,
  ADT names (``Tree``, ``List[Tensor[H]]``).
* **Statements** assignment (with tuple unpacking), ``x: T = e``, ``x += e``, ``return``,
  ``if``/``else``, ``match``/``case`` over constructors (checked for exhaustiveness),
  ``while <host bool>:`` (``while True:`` when its body has a ``break``), ``for i in
  range(n):`` and ``for x in xs:`` over a ``List`` (or ``for a, b in pairs:``, ``for a, b in
  zip(xs, ys):``), ``break`` and ``continue``, ``phase()``. Loops may nest; variables they
  assign carry over (after a ``break``, with the values they had there). ``return`` inside a
  loop is rejected with the way to write it instead (``break``, then return after the loop).
* **Expressions** tensor ops from the registry (``dense``, ``sigmoid``, ``concat``, ``split``,
  ...), ``+ - * / @`` on tensors (a host int or float on either side scales the tensor:
  ``x * s`` becomes ``x * scalar(s)``), host ``int``/``float``/``bool`` arithmetic and comparisons,
  ``abs(a)``, ``min(a, b, ...)``, ``max(a, b, ...)`` on host numbers (``max(x)`` and
  ``max(x, axis)`` of a tensor reduce it), ``int(a)`` (toward zero) and ``float(a)`` of a
  host number, ``len(xs)`` of a ``List`` and ``xs[k]`` at a host int ``k`` (negative ones
  count from the end; out of range is a typed error, the same on every path), ``zip(xs, ys,
  ...)`` of Lists (as long as the shortest), ``a if c else b``, tuples and ``t[0]``, tensor
  slices ``x[a:b]`` at constant bounds and ``x[k:k + L]`` at a host int ``k`` with a constant
  length ``L`` (rows ``k .. k+L-1`` of the first axis; a ``k`` outside ``[0, rows - L]`` is
  ``embed``'s typed error), constructor and function calls, ``parallel(f(a), g(b))`` for
  independent calls, ``map(f, xs)`` for a parallel map (``map(f, xs, ys, a)``: an argument
  that is a List of what ``f`` takes there is zipped with ``xs``, any other is passed to every
  call), and the tensor-to-host reads ``item(x)`` and ``argmax(x)`` that let control flow
  depend on tensor values.
* **List reductions** ``sum(xs)``, ``max(xs)`` (elementwise) and ``argmax(scores)`` (a host
  int) of a ``List`` of tensors, and ``attend(keys, values, query)``, the softmax over
  ``sum(k * query)`` weighting the values. Each waits for its inputs as a read does and runs
  as one segmented launch per pass over every instance's list, whatever its length, where a
  recursive helper makes one launch per element (:mod:`acrobat.ir.list_ops`,
  :mod:`acrobat.runtime.segments`).
* **Host ints** are Python's, and ``int ** int`` is an int: a negative exponent is a typed
  error (``2 ** -1``; write ``(a * 1.0) ** b`` or ``float(a) ** b`` for a float).
* ``phase()`` starts the next program phase; only at the top level of ``main``, and not
  after an ``if``/``match`` that may return early.

Everything else (imports, attribute access, lambdas, comprehensions, ``global``, calls of
undefined names such as ``open`` or ``__import__``) is rejected with a typed error that
carries file:line:col and a hint. The source text is only ever handed to ``ast.parse``.
"""

from __future__ import annotations

import ast
import math
import re

from acrobat.errors import (
    AcrobatError,
    AcrobatNameError,
    AcrobatSyntaxError,
    AcrobatTypeError,
    SizeLimitError,
    Span,
)
from acrobat.frontend.declarations import Declarations, read_declarations
from acrobat.frontend.generics import type_params_of
from acrobat.frontend.statements import FunctionLowerer, Signature
from acrobat.ir.nodes import AdtDef, CtorDef, Function, Module, TupleExpr, Var
from acrobat.ir.typecheck import infer_module
from acrobat.ir.types import AdtType, TypeParam

__all__ = ["parse", "PRELUDE"]

_T = TypeParam("T")
PRELUDE = (
    AdtDef("List", ("T",), (CtorDef("Nil", ()), CtorDef("Cons", (_T, AdtType("List", (_T,)))))),
    AdtDef("Option", ("T",), (CtorDef("Nothing", ()), CtorDef("Some", (_T,)))),
)
_PRELUDE_USE = {
    "List": re.compile(r"\b(List|Nil|Cons|map)\b"),
    "Option": re.compile(r"\b(Option|Nothing|Some)\b"),
}


def parse(source: str, sizes: dict[str, int] | None = None, filename: str = "<source>") -> Module:
    """Parse model source text into a typed :class:`~acrobat.ir.nodes.Module`.

    ``sizes`` binds (or overrides) the program's sizes, e.g. ``{"H": 512}``. The source is
    never executed. Errors are :class:`acrobat.errors.AcrobatError` subclasses.
    """
    try:
        return _parse(source, sizes, filename)
    except (RecursionError, MemoryError):
        raise AcrobatSyntaxError(
            "the program is nested too deeply to read",
            Span(filename, 1, 0),
            hint="split long expressions into several assignments",
        ) from None


# Past these a program is refused before any work on it: compile time grows faster than
# linearly in places (fusion, the taint fixpoint). The largest built-in model (Berxit) has
# 1,800 syntax nodes in about 300 lines; the node limit is about 1,800 simple statements.
MAX_SOURCE_LINES = 5_000
MAX_SYNTAX_NODES = 20_000


def _refuse_long_source(source: str, filename: str) -> None:
    """Counted before Python parses it (20,000 lines take seconds to parse)."""
    lines = source.count("\n") + (not source.endswith("\n"))
    if lines > MAX_SOURCE_LINES:
        raise SizeLimitError(
            f"the program has {lines:,} lines, over the longest acrobat compiles",
            Span(filename, MAX_SOURCE_LINES + 1, 0),
            MAX_SOURCE_LINES,
            advice="write a shorter program (call a function in a loop instead of unrolling it)",
        )


def _refuse_too_large(tree: ast.Module, filename: str) -> None:
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_SYNTAX_NODES:
        raise SizeLimitError(
            f"the program has {nodes:,} syntax nodes, over the largest acrobat compiles",
            Span(filename, 1, 0),
            MAX_SYNTAX_NODES,
            advice="write a smaller program (call a function in a loop instead of unrolling it)",
        )


def _refuse_non_finite(tree: ast.Module, filename: str) -> None:
    """A float literal that Python reads as infinite (``1e999``) has no value a kernel can
    hold: refuse it here, where its line is known."""
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Constant) else None
        if type(value) is float and not math.isfinite(value):
            raise AcrobatSyntaxError(
                "this number is too large for a float (it reads as infinity)",
                Span(filename, node.lineno, node.col_offset),
                hint="write a finite constant, at most 1.7e308",
            )


def _parse(source: str, sizes: dict[str, int] | None, filename: str) -> Module:
    _refuse_long_source(source, filename)
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as err:
        raise AcrobatSyntaxError(
            f"not valid Python syntax: {err.msg}",
            Span(filename, err.lineno or 0, max((err.offset or 1) - 1, 0)),
        ) from None
    _refuse_too_large(tree, filename)
    _refuse_non_finite(tree, filename)
    decl = Declarations(filename)
    prelude = [a for a in PRELUDE if _PRELUDE_USE[a.name].search(source)]
    for adt in prelude:
        decl.adts[adt.name] = adt
        decl.ctors.update({c.name: adt.name for c in adt.ctors})
    read_declarations(tree, decl, dict(sizes or {}))
    if "main" not in decl.functions:
        raise AcrobatNameError(
            "the program has no entry function `main`",
            Span(filename, 1, 0),
            hint="define def main(x: ...) -> ...:",
        )
    sigs = []
    for fn in decl.functions.values():
        sig = _signature(decl, fn)
        if any(type_params_of(t) for t in [sig.ret] + [t for _, t in sig.params]):
            if sig.is_entry:
                raise AcrobatTypeError(
                    "main cannot be generic", decl.span(fn), hint="give main concrete types"
                )
            decl.generics[sig.name] = sig  # lowered per argument types, where called
        else:
            sigs.append(sig)
    sig_module = Module(
        tuple(decl.sizes.items()),
        tuple(decl.params.values()),
        tuple(decl.adts.values()),
        tuple(
            Function(s.name, tuple(Var(n, ty=t) for n, t in s.params), s.ret, TupleExpr(()))
            for s in sigs
        ),
    )
    functions, queue = [], list(sigs)
    while queue:
        lifted: list[Signature] = []
        functions.extend(FunctionLowerer(decl, sig_module, s, lifted).lower() for s in queue)
        queue = lifted
    module = Module(
        tuple(decl.sizes.items()),
        tuple(decl.params.values()),
        tuple(decl.adts.values()),
        tuple(functions),
    )
    return infer_module(module)


def _signature(decl: Declarations, fn: ast.FunctionDef) -> Signature:
    sp = decl.span(fn)
    a = fn.args
    if fn.decorator_list:
        raise AcrobatSyntaxError("decorators are not supported", decl.span(fn.decorator_list[0]))
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise AcrobatSyntaxError(
            f"{fn.name}: only plain positional parameters are supported (no defaults, *args, **kw)",
            sp,
        )
    params = []
    for arg in a.args:
        if arg.annotation is None:
            raise AcrobatTypeError(
                f"parameter {arg.arg!r} of {fn.name} has no type annotation",
                decl.span(arg),
                hint=f"write {arg.arg}: Tensor[H] (or int, bool, an ADT, ...)",
            )
        params.append((arg.arg, _typed(decl, arg.annotation)))
    if fn.returns is None:
        raise AcrobatTypeError(
            f"function {fn.name} has no result annotation",
            sp,
            hint=f"write def {fn.name}(...) -> Tensor[H]:",
        )
    body = fn.body[1:] if fn.body and _docstring(fn.body[0]) else fn.body
    return Signature(fn.name, params, _typed(decl, fn.returns), body, fn, fn.name == "main")


def _typed(decl: Declarations, node: ast.expr):
    try:
        return decl.type_of(node, tuple(sorted(decl.type_vars)))
    except AcrobatError as err:
        if err.span is None:
            raise type(err)(err.message, decl.span(node), err.hint) from None
        raise


def _docstring(st: ast.stmt) -> bool:
    return (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Constant)
        and isinstance(st.value.value, str)
    )
