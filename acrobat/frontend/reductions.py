"""List reductions: ``sum(xs)``, ``max(xs)``, ``argmax(xs)`` of a ``List`` of tensors and
``attend(keys, values, query)``.

``sum``, ``max`` and ``attend`` lower to one op each on the whole list
(:mod:`acrobat.ir.list_ops`): the batched runtime answers every instance's reduction of a
pass in one segmented launch, whatever the lists' lengths. ``argmax`` of scores
(``Tensor[()]`` or ``Tensor[1]``: the index of the largest, the first of equal ones, a host
int) is a generated helper, a balanced tree over the list: the helper splits the list in two
halves (host code), reduces both in ``parallel`` and combines the two results (reading their
scores to the host), so every level of the tree, across the list and across every instance,
is one batch: ``ceil(log2 n) + 1`` launches for a list of ``n``.

``max``, ``argmax`` and ``attend`` of an empty list raise the typed error of ``xs[0]``, the
same on every path.
"""

from __future__ import annotations

import ast

from acrobat.errors import AcrobatTypeError
from acrobat.frontend.generated import located
from acrobat.ir.nodes import Expr, FnCall, OpCall
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


_ARGMAX = """\
if n == 1:
    return xs[0], at
h = n // 2
left, right = {split}(xs, h)
a, b = parallel({tree}(left, h, at), {tree}(right, n - h, at + h))
return b if item(sum(b[0] - a[0])) > 0.0 else a
"""


def _lst(t: Type) -> AdtType:
    return AdtType("List", (t,))


class ReductionCalls:
    """Mixin of the function lowerer: the list reductions as calls of generated helpers
    (needs what :class:`acrobat.frontend.generated.HelperCalls` needs, and its methods)."""

    def helper_fn(self, kind: str, params, ret, text: str, node: ast.AST) -> str:
        name = self.helper_name(kind)
        self.register_helper(name, params, ret, located(ast.parse(text).body, node), node)
        return name

    def argmax_tree(self, elem: Type, node: ast.AST) -> str:
        """The split and tree helpers of ``argmax`` over a List of ``elem``."""
        split = self.helper_name("split")
        self.register_helper(
            split,
            [("xs", _lst(elem)), ("k", INT)],
            TupleType((_lst(elem), _lst(elem))),
            located(ast.parse(_SPLIT.format(split=split)).body, node),
            node,
        )
        tree = self.helper_name("argmax")
        text = _ARGMAX.format(split=split, tree=tree)
        params = [("xs", _lst(elem)), ("n", INT), ("at", INT)]
        ret = TupleType((elem, INT))
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
        if kind != "argmax":
            attrs = (("shape", elem.shape),) if kind == "sum" else ()
            return OpCall(f"list_{kind}", (first,), attrs, span=sp)
        if elem.size != 1 or len(elem.shape) > 1:
            raise AcrobatTypeError(
                f"argmax of a List needs scores (Tensor[()] or Tensor[1]), got List[{elem}]", sp
            )
        tree = self.argmax_tree(elem, node)
        # the empty list: xs[0] raises (the int() around it is never reached)
        text = (
            f"if len(xs) == 0:\n    return int(item(sum(xs[0])))\nreturn {tree}(xs, len(xs), 0)[1]"
        )
        xs = [("xs", _lst(elem))]
        return FnCall(self.helper_fn("argmax", xs, INT, text, node), (first,), span=sp)

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
        return OpCall("list_attend", (keys, values, query), span=sp)
