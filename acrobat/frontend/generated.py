"""Helper functions the frontend writes for the program: ``zip`` and ``map`` over several lists.

Each is ordinary source (parsed with ``ast`` here, never executed) that the frontend lowers
like the program's own functions, so every path (the interpreter, the host programs, the
direct strategy) runs the same IR and no backend needs to know about it:

* ``zip(xs, ys, ...)`` is a call of ``<fn>_zip<k>``, a recursion that pairs the heads and
  stops at the shortest list (Python's ``zip``): host code only, no kernel;
* ``map(f, xs, ys, extra)`` where ``f`` takes an element of ``ys`` (not the list) is
  ``map(<fn>_map<k>, zip(xs, ys), extra)``: the adapter unpacks the pair and calls ``f``, so
  the elements stay one parallel ``map``.
"""

from __future__ import annotations

import ast

from acrobat.errors import AcrobatSyntaxError, AcrobatTypeError
from acrobat.ir.nodes import Expr, FnCall, Map
from acrobat.ir.typecheck import _has_meta
from acrobat.ir.types import AdtType, TupleType


def located(stmts: list[ast.stmt], at: ast.AST) -> list[ast.stmt]:
    """``stmts`` with every node at ``at``'s place (errors in a helper name its call)."""
    for st in stmts:
        for sub in ast.walk(st):
            if hasattr(sub, "lineno") or isinstance(sub, (ast.expr, ast.stmt)):
                ast.copy_location(sub, at)
    return stmts


def zip_body(name: str, n: int, at: ast.AST) -> list[ast.stmt]:
    """The body of ``name(l0, ..., l{n-1})``: the list of tuples of the lists' heads."""
    heads = ", ".join(f"h{j}" for j in range(n))
    rests = ", ".join(f"r{j}" for j in range(n))
    lines, ind = [], ""
    for j in range(n):
        lines += [
            f"{ind}match l{j}:",
            f"{ind}    case Nil():",
            f"{ind}        return Nil()",
            f"{ind}    case Cons(h{j}, r{j}):",
        ]
        ind += "        "
    lines.append(f"{ind}return Cons(({heads},), {name}({rests}))")
    return located(ast.parse("\n".join(lines)).body, at)


def map_adapter_body(fn: str, zipped: list[bool], at: ast.AST) -> list[ast.stmt]:
    """The body of the adapter ``(pair, *broadcast)`` that calls ``fn``: the arguments
    marked in ``zipped`` come out of the tuple ``pair``, the others are passed on."""
    k = sum(zipped)
    args, z, b = [], 0, 0
    for is_zipped in zipped:
        if is_zipped:
            args.append(f"z{z}")
            z += 1
        else:
            args.append(f"b{b}")
            b += 1
    unpack = ", ".join(f"z{j}" for j in range(k))
    text = f"{unpack}, = pair\nreturn {fn}({', '.join(args)})"
    return located(ast.parse(text).body, at)


class HelperCalls:
    """Mixin of the function lowerer: ``zip(...)`` and ``map`` over several lists as calls
    of generated helpers. Needs ``expr``, ``type_of``, ``span``, ``inf``,
    ``register_helper``, ``sig``, ``sigs`` and ``decl``."""

    def helper_name(self, kind: str) -> str:
        k = 0
        while True:
            k += 1
            name = f"{self.sig.name}_{kind}{k}"
            if name not in self.decl.functions and name not in self.sigs.function_map:
                return name

    def element_types(self, lists: list, nodes: list[ast.expr], what: str) -> list:
        """The element type of each lowered List argument (a typed error otherwise)."""
        out = []
        for e, node in zip(lists, nodes):
            ty = self.inf.resolve(self.type_of(e))
            if not (isinstance(ty, AdtType) and ty.name == "List") or _has_meta(ty):
                raise AcrobatTypeError(
                    f"{what} takes Lists of a known type, got {ty}",
                    self.span(node),
                    hint="annotate an empty list where it is made: xs: List[Tensor[H]] = Nil()",
                )
            out.append(ty.args[0])
        return out

    def zip_of(self, lists: list, nodes: list[ast.expr], at: ast.AST) -> FnCall:
        """A call of a generated ``zip`` of the lowered ``lists``."""
        elems = self.element_types(lists, nodes, "zip")
        name = self.helper_name("zip")
        params = [(f"l{j}", AdtType("List", (t,))) for j, t in enumerate(elems)]
        ret = AdtType("List", (TupleType(tuple(elems)),))
        self.register_helper(name, params, ret, zip_body(name, len(elems), at), at)
        return FnCall(name, tuple(lists), span=self.span(at))

    def zip_call(self, node: ast.Call) -> FnCall:
        """``zip(xs, ys, ...)``: the list of tuples of the lists' elements, as long as the
        shortest."""
        if (
            node.keywords
            or len(node.args) < 2
            or any(isinstance(a, ast.Starred) for a in node.args)
        ):
            raise AcrobatSyntaxError(
                "zip takes two or more Lists", self.span(node), hint="zip(xs, ys)"
            )
        return self.zip_of([self.expr(a) for a in node.args], node.args, node)

    def zipped_map(self, node: ast.Call, fn: str, xs, extra: tuple) -> Expr | None:
        """``map(fn, xs, ys, extra)`` where ``fn`` takes an element of the List ``ys``:
        a ``map`` of an adapter over ``zip(xs, ys)``. None: every extra argument is
        passed whole (``fn`` takes the List, a tensor, ...)."""
        ftypes = [p.ty for p in self.sigs.function_map[fn].params]
        zipped = []
        for j, a in enumerate(extra):
            ty = self.inf.resolve(self.type_of(a))
            zipped.append(
                j + 1 < len(ftypes)
                and isinstance(ty, AdtType)
                and ty.name == "List"
                and ty.args[0] == ftypes[j + 1]
            )
        if not any(zipped):
            return None
        lists = [xs] + [a for a, z in zip(extra, zipped) if z]
        nodes = [node.args[1]] + [n for n, z in zip(node.args[2:], zipped) if z]
        pairs = self.zip_of(lists, nodes, node)
        whole = [a for a, z in zip(extra, zipped) if not z]
        pair_ty = self.inf.resolve(self.type_of(pairs)).args[0]
        params = [("pair", pair_ty)] + [
            (f"b{j}", self.inf.resolve(self.type_of(a))) for j, a in enumerate(whole)
        ]
        name = self.helper_name("map")
        body = map_adapter_body(fn, [True] + zipped, node)
        ret = self.sigs.function_map[fn].ret
        self.register_helper(name, params, ret, body, node)
        return Map(name, pairs, tuple(whole), span=self.span(node))
