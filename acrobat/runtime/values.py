"""Instance values <-> value ids: the conversion at the edges of a run.

A run's inputs are ordinary instance values (ADT values, tuples, ints, NumPy arrays);
inside the run every tensor is a value id (a handle to an arena row). :func:`to_handles`
uploads an input's tensors and replaces them by fresh ids, :func:`from_handles` reads a
result's ids back into host arrays, and :func:`has_tensor` tells which types need either
(the others pass through unchanged).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from acrobat.ir.nodes import Module
from acrobat.ir.types import AdtType, TensorType, TupleType, Type, substitute
from acrobat.ir.values import AdtValue


class ValueStore(Protocol):
    """Where tensors live during a run (the executor)."""

    def upload(self, vid: int, value: np.ndarray) -> None: ...

    def read(self, vid: int) -> np.ndarray: ...


def to_handles(m: Module, value: Any, ty: Type, store: ValueStore, next_vid: int):
    """An instance with every tensor replaced by a value id; returns (value, next id).
    Callers skip it for types that hold no tensor (see :func:`has_tensor`)."""
    counter = [next_vid]

    def conv(v, t):
        if isinstance(t, TensorType):
            vid = counter[0]
            counter[0] += 1
            store.upload(vid, np.asarray(v))
            return vid
        if isinstance(t, TupleType):
            return tuple(conv(x, ft) for x, ft in zip(v, t.fields))
        return _map_adt(m, v, t, conv)

    out = conv(value, ty)
    return out, counter[0]


def from_handles(m: Module, value: Any, ty: Type, store: ValueStore):
    """A result with every value id replaced by its tensor (host arrays).
    Callers skip it for types that hold no tensor (see :func:`has_tensor`)."""

    def conv(v, t):
        if isinstance(t, TensorType):
            return store.read(v)
        if isinstance(t, TupleType):
            return tuple(conv(x, ft) for x, ft in zip(v, t.fields))
        return _map_adt(m, v, t, conv)

    return conv(value, ty)


def map_tensors(m: Module, value: Any, ty: Type, fn) -> Any:
    """``value`` with every tensor ``x`` (of type ``t``) replaced by ``fn(x, t)``: how the
    direct strategy turns inputs into ``[1, *shape]`` arrays and results back."""

    def conv(v, t):
        if isinstance(t, TensorType):
            return fn(v, t)
        if isinstance(t, TupleType):
            return tuple(conv(x, ft) for x, ft in zip(v, t.fields))
        return _map_adt(m, v, t, conv)

    return conv(value, ty)


def _map_adt(m: Module, v, t, conv):
    """Rebuild an ADT value with ``conv`` applied to its non-recursive fields.

    The recursive spine (a list's tail, a tree's subtrees of the same type) is walked
    with an explicit stack, so any depth works."""
    if not isinstance(t, AdtType):
        return v
    adt = m.adt_map[t.name]
    mapping = dict(zip(adt.type_params, t.args))
    # field types per constructor, once; a recursive field is ``t`` itself
    types = {
        c.name: [t if (ft := substitute(f, mapping)) == t else ft for f in c.fields]
        for c in adt.ctors
    }

    def fields_of(node):
        return list(zip(node.fields, types[node.ctor]))

    order, stack = [], [v]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(f for f, ft in fields_of(node) if ft is t)
    done: dict[int, AdtValue] = {}
    for node in reversed(order):
        fields = tuple(done[id(f)] if ft is t else conv(f, ft) for f, ft in fields_of(node))
        done[id(node)] = AdtValue(node.ctor, fields)
    return done[id(v)]


def has_tensor(m: Module, ty: Type, seen: set | None = None) -> bool:
    """Whether values of ``ty`` can hold a tensor."""
    seen = set() if seen is None else seen
    if isinstance(ty, TensorType):
        return True
    if isinstance(ty, TupleType):
        return any(has_tensor(m, f, seen) for f in ty.fields)
    if isinstance(ty, AdtType):
        if ty in seen:
            return False
        seen.add(ty)
        adt = m.adt_map[ty.name]
        mapping = dict(zip(adt.type_params, ty.args))
        return any(has_tensor(m, substitute(f, mapping), seen) for c in adt.ctors for f in c.fields)
    return False


def array_bytes(values) -> int:
    """Bytes of every NumPy array inside (nested) instance values."""
    total, stack = 0, list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray):
            total += v.nbytes
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, AdtValue):
            stack.extend(f for f in v.fields if not isinstance(f, (int, float)))
    return total
