"""List reductions: ops that reduce a whole ``List`` of tensors to one tensor.

``sum(xs)``, ``max(xs)``, ``argmax(scores)`` and ``attend(keys, values, query)`` of a List
lower to these ops
(:mod:`acrobat.frontend.reductions`). They take the list itself, not its elements one by
one, so an instance's list of any length is ONE reduction: the batched runtime answers
every instance's reductions of a pass in one segmented launch per reduction and element
type (:mod:`acrobat.runtime.segments`), where a helper over the list made a chain (or a
tree) of launches.

Like ``item``, a reduction waits for its inputs (kind ``HOST_READ``): its function runs
as a fiber, and the reduction is answered once the pending DFG has run. The functions
below are the per-instance meaning (the interpreter's, the direct strategy's); the
segmented kernels must equal them.

* ``list_sum``: the elementwise sum (the empty list's: zeros of the element type);
* ``list_max``: the elementwise max;
* ``list_attend``: the softmax over ``sum(k * query)`` of each key, weighting the values
  (keys and values zipped: the shorter list decides);
* ``list_argmax`` of scores (one-element tensors): the index of the largest, a host int
  (the first of equal ones; a NaN counts as the largest, as in ``np.argmax``).

``list_max``, ``list_attend`` and ``list_argmax`` of an empty list raise the error of
``xs[0]``.
"""

from __future__ import annotations

import numpy as np

from acrobat.errors import AcrobatTypeError
from acrobat.ir.ops import LIST_INDEX_ERROR, REQUIRED, OpKind, list_items, register
from acrobat.ir.types import INT, AdtType, TensorType

EMPTY = f"{LIST_INDEX_ERROR}: 0 for a list of 0"
"""The error of a reduction that needs an element, of an empty list (as ``xs[0]``'s)."""

LIST_REDUCTIONS = ("list_sum", "list_max", "list_attend", "list_argmax")

NEEDS_AN_ELEMENT = frozenset(LIST_REDUCTIONS) - {"list_sum"}
"""The reductions that raise :data:`EMPTY` of an empty list (of the shorter of two)."""


def signature(e) -> tuple:
    """The launch signature of reduction ``e`` (a typed ``OpCall``): ``(result shape,
    dtype, element shape)``; requests of one reduction and signature are one launch
    (:mod:`acrobat.runtime.segments`), an ``argmax``'s result shape its scores'."""
    elem = e.args[0].ty.args[0]
    shape = elem.shape if e.op == "list_argmax" else e.ty.shape
    return (tuple(shape), elem.dtype, tuple(elem.shape))


def sum_of(items: list, shape) -> np.ndarray:
    """The sum of a list's tensors (``shape``: theirs, which an empty list cannot tell)."""
    if not items:
        return np.zeros(shape, np.float32)
    return np.sum(np.stack(items), axis=0)


def max_of(items: list) -> np.ndarray:
    """The elementwise max of a list's tensors."""
    if not items:
        raise ValueError(EMPTY)
    return np.max(np.stack(items), axis=0)


def attend_of(keys: list, values: list, query: np.ndarray) -> np.ndarray:
    """The softmax over ``key @ query`` weighting the values (zipped)."""
    n = min(len(keys), len(values))
    if n == 0:
        raise ValueError(EMPTY)
    vs = np.stack(values[:n])
    s = np.stack(keys[:n]) @ query
    w = np.exp(s - s.max())
    return np.tensordot(w / w.sum(), vs, axes=1).astype(vs.dtype)


def argmax_of(items: list) -> int:
    """The index of the largest of a list's one-element tensors."""
    if not items:
        raise ValueError(EMPTY)
    return int(np.argmax(np.stack([x.reshape(()) for x in items])))


ON_ITEMS = {
    "list_sum": sum_of,
    "list_max": max_of,
    "list_attend": attend_of,
    "list_argmax": argmax_of,
}
"""Each reduction on Python lists of arrays (the direct program's)."""


def list_sum(xs, shape):
    return sum_of(list_items(xs), shape)


def list_max(xs):
    return max_of(list_items(xs))


def list_attend(keys, values, query):
    return attend_of(list_items(keys), list_items(values), query)


def list_argmax(xs):
    return argmax_of(list_items(xs))


def _tensor_list(t, what: str) -> TensorType:
    if not (isinstance(t, AdtType) and t.name == "List" and isinstance(t.args[0], TensorType)):
        raise AcrobatTypeError(f"{what}: needs a List of tensors, got {t}")
    return t.args[0]


@register(
    "list_sum",
    1,
    OpKind.HOST_READ,
    list_sum,
    {"shape": REQUIRED},
    doc="the elementwise sum of a List (shape: its elements')",
)
def _sum_rule(ts, attrs):
    t = _tensor_list(ts[0], "sum")
    if tuple(attrs["shape"]) != t.shape:
        raise AcrobatTypeError(f"sum: shape {attrs['shape']} is not the elements' {t.shape}")
    return t


@register("list_max", 1, OpKind.HOST_READ, list_max, doc="the elementwise max of a List")
def _max_rule(ts, attrs):
    return _tensor_list(ts[0], "max")


@register(
    "list_attend",
    3,
    OpKind.HOST_READ,
    list_attend,
    doc="attend(keys, values, query): the softmax-weighted sum of the values",
)
def _attend_rule(ts, attrs):
    key, value = _tensor_list(ts[0], "attend"), _tensor_list(ts[1], "attend")
    if len(key.shape) != 1 or ts[2] != key:
        raise AcrobatTypeError(
            f"attend takes keys List[Tensor[D]], values List[Tensor[...]] and a query "
            f"Tensor[D], got List[{key}], List[{value}] and {ts[2]}"
        )
    return value


@register(
    "list_argmax",
    1,
    OpKind.HOST_READ,
    list_argmax,
    doc="the index of the largest of a List of scores, on the host",
)
def _argmax_rule(ts, attrs):
    t = _tensor_list(ts[0], "argmax")
    if t.size != 1 or len(t.shape) > 1:
        raise AcrobatTypeError(
            f"argmax of a List needs scores (Tensor[()] or Tensor[1]), got List[{t}]"
        )
    return INT
