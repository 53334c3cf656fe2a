"""List reductions: ``sum(xs)``, ``max(xs)``, ``argmax(xs)`` of a ``List`` of tensors and
``attend(keys, values, query)``, written as generated helper functions.

Each is a balanced tree over the list: the helper splits the list in two halves (host code),
reduces both in ``parallel`` and combines the two results, so every level of the tree, across
the list and across every instance, is one batch: ``ceil(log2 n) + 1`` launches for a list of
``n`` where a recursive helper over the list makes a chain of ``n`` (the ``acrobat`` policy
batches by depth, and both halves of every split start at the same depth). The combines:

* ``sum``: ``a + b`` (the empty list's sum is zeros);
* ``max``: ``maximum(a, b)``, elementwise;
* ``argmax`` of scores (``Tensor[()]`` or ``Tensor[1]``): the index of the largest, the first
  of equal ones (a host int; each combine reads its two scores to the host);
* ``attend``: the softmax over ``sum(k * query)`` of each key weighting the values, merged as
  in online softmax: a leaf is ``(s, 1, v)``, two halves ``(m1, l1, a1)``, ``(m2, l2, a2)``
  merge into ``(m, l1 e1 + l2 e2, a1 e1 + a2 e2)`` with ``m = max(m1, m2)`` and
  ``ei = exp(mi - m)``; the result is ``a / l``. Keys and values are zipped (the shorter list
  decides).

``max``, ``argmax`` and ``attend`` of an empty list raise the typed error of ``xs[0]``, the
same on every path. The helpers are source text lowered like the program's own functions.
"""

from __future__ import annotations

import ast

from acrobat.errors import AcrobatTypeError
from acrobat.frontend.generated import located
from acrobat.ir.nodes import Expr, FnCall
from acrobat.ir.types import INT, AdtType, TensorType, TupleType, Type

REDUCTIONS = ("sum", "max", "argmax", "attend")

_SPLIT = """\
if k == 0:
    return Nil(), xs
match xs:
    case Nil():
        return Nil(), Nil()
    case Cons(x, rest):
        a, b = {split}(rest, k - 1)
        return Cons(x, a), b
"""

_TREE = """\
if n == 1:
    return {leaf}
h = n // 2
left, right = {split}(xs, h)
a, b = parallel({tree}(left, h{at_left}), {tree}(right, n - h{at_right}))
{combine}
"""

_COMBINE = {
    "sum": "return a + b",
    "max": "return maximum(a, b)",
    "argmax": "return b if item(sum(b[0] - a[0])) > 0.0 else a",
    "attend": "m1, l1, a1 = a\nm2, l2, a2 = b\nm = maximum(m1, m2)\ne1 = exp(m1 - m)\n"
    "e2 = exp(m2 - m)\nreturn m, l1 * e1 + l2 * e2, a1 * e1 + a2 * e2",
}


def _lst(t: Type) -> AdtType:
    return AdtType("List", (t,))


class ReductionCalls:
    """Mixin of the function lowerer: the list reductions as calls of generated helpers
    (needs what :class:`acrobat.frontend.generated.HelperCalls` needs, and its methods)."""

    def helper_fn(self, kind: str, params, ret, text: str, node: ast.AST) -> str:
        name = self.helper_name(kind)
        self.register_helper(name, params, ret, located(ast.parse(text).body, node), node)
        return name

    def tree(self, kind: str, elem: Type, ret: Type, node: ast.AST) -> str:
        """The split and tree helpers of reduction ``kind`` over a List of ``elem``."""
        split = self.helper_name("split")
        self.register_helper(
            split,
            [("xs", _lst(elem)), ("k", INT)],
            TupleType((_lst(elem), _lst(elem))),
            located(ast.parse(_SPLIT.format(split=split)).body, node),
            node,
        )
        tree = self.helper_name(kind)
        at = kind == "argmax"
        text = _TREE.format(
            leaf="xs[0], at" if at else "xs[0]",
            split=split,
            tree=tree,
            at_left=", at" if at else "",
            at_right=", at + h" if at else "",
            combine=_COMBINE[kind],
        )
        params = [("xs", _lst(elem)), ("n", INT)] + ([("at", INT)] if at else [])
        self.register_helper(tree, params, ret, located(ast.parse(text).body, node), node)
        return tree

    def list_reduction(self, kind: str, first: Expr, node: ast.Call) -> Expr:
        """``sum``/``max``/``argmax`` of a lowered List ``first``, or ``attend(ks, vs, q)``."""
        sp = self.span(node)
        n_args = 3 if kind == "attend" else 1
        if len(node.args) != n_args or node.keywords:
            want = "(keys, values, query)" if kind == "attend" else "(xs)"
            raise AcrobatTypeError(f"{kind} of a List takes {want}", sp)
        (elem,) = self.element_types([first], node.args[:1], kind)
        if not isinstance(elem, TensorType):
            raise AcrobatTypeError(f"{kind} of a List needs tensors, got List[{elem}]", sp)
        if kind == "attend":
            return self.attend(first, elem, node)
        xs = [("xs", _lst(elem))]
        if kind == "argmax":
            if elem.size != 1 or len(elem.shape) > 1:
                raise AcrobatTypeError(
                    f"argmax of a List needs scores (Tensor[()] or Tensor[1]), got List[{elem}]",
                    sp,
                )
            tree = self.tree(kind, elem, TupleType((elem, INT)), node)
            # the empty list: xs[0] raises (the int() around it is never reached)
            text = (
                f"if len(xs) == 0:\n    return int(item(sum(xs[0])))\n"
                f"return {tree}(xs, len(xs), 0)[1]"
            )
            return FnCall(self.helper_fn("argmax", xs, INT, text, node), (first,), span=sp)
        tree = self.tree(kind, elem, elem, node)
        empty = f"zeros({elem.shape!r})" if kind == "sum" else "xs[0]"
        text = f"if len(xs) == 0:\n    return {empty}\nreturn {tree}(xs, len(xs))"
        return FnCall(self.helper_fn(kind, xs, elem, text, node), (first,), span=sp)

    def attend(self, keys: Expr, key: TensorType, node: ast.Call) -> Expr:
        """``attend(keys, values, query)``: the softmax-weighted sum of the values."""
        sp = self.span(node)
        values, query = (self.expr(a) for a in node.args[1:])
        (value,) = self.element_types([values], node.args[1:2], "attend")
        qt = self.inf.resolve(self.type_of(query))
        if len(key.shape) != 1 or qt != key or not isinstance(value, TensorType):
            raise AcrobatTypeError(
                f"attend takes keys List[Tensor[D]], values List[Tensor[...]] and a query "
                f"Tensor[D], got List[{key}], List[{value}] and {qt}",
                sp,
            )
        score = TensorType((1,), key.dtype)
        triple = TupleType((score, score, value))
        leaf = self.helper_fn(
            "leaf",
            [("k", key), ("v", value), ("q", key)],
            triple,
            "return sum(k * q, keepdims=True), ones(1), v",
            node,
        )
        tree = self.tree("attend", triple, triple, node)
        text = (
            f"ls = map({leaf}, ks, vs, q)\nif len(ls) == 0:\n    return ls[0][2]\n"
            f"m, l, acc = {tree}(ls, len(ls))\nreturn acc / l"
        )
        params = [("ks", _lst(key)), ("vs", _lst(value)), ("q", key)]
        name = self.helper_fn("attend", params, value, text, node)
        return FnCall(name, (keys, values, query), span=sp)
