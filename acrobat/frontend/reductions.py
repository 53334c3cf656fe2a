"""List reductions: ``sum(xs)``, ``max(xs)``, ``argmax(xs)`` of a ``List`` of tensors and
``attend(keys, values, query)``.

Each lowers to one op on the whole list (:mod:`acrobat.ir.list_ops`): the batched runtime
answers every instance's reduction of a pass in one segmented launch, whatever the lists'
lengths. ``argmax`` takes scores (``Tensor[()]`` or ``Tensor[1]``) and gives the index of the
largest, the first of equal ones, as a host int.

``max``, ``argmax`` and ``attend`` of an empty list raise the typed error of ``xs[0]``, the
same on every path.
"""

from __future__ import annotations

import ast

from acrobat.errors import AcrobatTypeError
from acrobat.ir.nodes import Expr, OpCall
from acrobat.ir.types import TensorType

REDUCTIONS = ("sum", "max", "argmax", "attend")


class ReductionCalls:
    """Mixin of the function lowerer: the list reductions as ops (needs the lowerer's
    ``span``, ``expr``, ``element_types``, ``type_of`` and ``inf``)."""

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
        if kind == "argmax" and (elem.size != 1 or len(elem.shape) > 1):
            raise AcrobatTypeError(
                f"argmax of a List needs scores (Tensor[()] or Tensor[1]), got List[{elem}]", sp
            )
        attrs = (("shape", elem.shape),) if kind == "sum" else ()
        return OpCall(f"list_{kind}", (first,), attrs, span=sp)

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
