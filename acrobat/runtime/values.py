"""Instance values <-> value ids: the conversion at the edges of a run.

A run's inputs are ordinary instance values (ADT values, tuples, ints, NumPy arrays);
inside the run every tensor is a value id (a handle to an arena row). :func:`to_handles`
uploads an input's tensors and replaces them by fresh ids, :func:`from_handles` reads a
result's ids back into host arrays, and :func:`has_tensor` tells which types need either
(the others pass through unchanged). :func:`converter` maps every tensor of a value,
planned once per type: ``to_handles`` uploads with it, the direct strategy converts its
inputs and results with it.
"""

from __future__ import annotations

import weakref
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
    if isinstance(ty, TensorType):  # a tensor: its id, without planning a converter
        store.upload(next_vid, np.asarray(value))
        return next_vid, next_vid + 1
    counter = [next_vid]

    def leaf(t: TensorType):
        def upload(x):
            vid = counter[0]
            counter[0] += 1
            store.upload(vid, np.asarray(x))
            return vid

        return upload

    conv = converter(m, ty, leaf)
    return (value if conv is None else conv(value)), counter[0]


def from_handles(m: Module, value: Any, ty: Type, store: ValueStore):
    """A result with every value id replaced by its tensor (host arrays).
    Callers skip it for types that hold no tensor (see :func:`has_tensor`)."""
    return from_handles_all(m, [value], ty, store)[0]


def from_handles_all(
    m: Module, values: list, ty: Type, store: ValueStore, heads: list | None = None, maker=None
) -> list:
    """:func:`from_handles` of many results of one type, with one read of all their
    tensors: ``store.read_many(ids)`` when the store has it (the executor: one gather per
    arena), else ``store.read`` per id. The walk over each value is made once per
    (module, type) and reused (see :func:`_walker`). ``heads``: what :func:`list_heads`
    gave for ``values`` (then the lists are not walked again); ``maker``: the engine's ADT
    maker, whose C calls (``items``, ``relist``, ``lists``), where it has them, rebuild
    lists of tensors without a walk in Python."""
    if heads is not None:
        out = _lists_from_heads(heads, store, maker)
        if out is not None:
            return out
    walk = _walker(m, ty)
    if walk is None:
        return list(values)
    collect, build = walk
    if getattr(build, "list_of_tensors", False):
        out = _lists_of_tensors(values, store, maker)
        if out is not None:
            return out
    ids: list = []
    for v in values:
        collect(v, ids)
    read_many = getattr(store, "read_many", None)
    arrays = read_many(ids) if read_many is not None else [store.read(i) for i in ids]
    nxt = iter(arrays).__next__
    return [build(v, nxt) for v in values]


def _lists_of_tensors(values: list, store: ValueStore, maker) -> list | None:
    """:func:`from_handles_all` of ``Cons``/``Nil`` lists of tensors in C (the native
    maker's ``items`` and ``relist``: BiRNN small b64's 1,289 output tensors, build 0.44
    -> 0.08 ms), or None (nothing done) for a maker without them or for a value of
    another shape."""
    read_many = getattr(store, "read_many", None)
    if getattr(maker, "relist", None) is None or read_many is None:
        return None
    ids: list = []
    for v in values:
        heads = maker.items(v)
        heads.reverse()  # tail first, as the general walker takes them
        ids.extend(heads)
    arrays = read_many(ids)
    out, at = [], 0
    for v in values:
        made = maker.relist(v, arrays, at)
        if made is None:
            return None
        new, at = made
        out.append(new)
    return out


def list_heads(m: Module, ty: Type, values: list, maker=None) -> list | None:
    """Each value's elements when ``ty`` is a list of tensors (``Cons``/``Nil``, each
    head a value id) and ``maker`` (the engine's) rebuilds lists in C, else None. Meant
    for right after the
    host program made the values, while their cells are in cache: BiRNN small b64's 64
    lists of 1,289 heads took 0.05 ms there against 0.31 ms after the kernels had run
    (the cells are scattered objects; the walk is a chain of cache misses)."""
    walk = _walker(m, ty)
    if getattr(maker, "lists", None) is None:
        return None
    if walk is None or not getattr(walk[1], "list_of_tensors", False):
        return None
    items = maker.items
    try:
        return [items(v) for v in values]
    except TypeError:  # a value the maker does not make: the general walk decides
        return None


def _lists_from_heads(heads: list, store: ValueStore, maker) -> list | None:
    """:func:`from_handles_all` of lists of tensors whose heads :func:`list_heads` took:
    one read of every tensor (``store.read_heads``: the executor's, a native call on host
    arenas), then new lists made in C from the arrays (``maker.lists``, no walk of the old
    cells). None without ``store.read_heads`` or a maker with ``lists``."""
    read_heads = getattr(store, "read_heads", None)
    if getattr(maker, "lists", None) is None or read_heads is None:
        return None
    return maker.lists(read_heads(heads), heads)


_WALKERS: dict[int, tuple] = {}  # id(module) -> (weak reference to it, {type: walker})


def _walker(m: Module, ty: Type):
    """``(collect, build)`` for values of ``ty`` in module ``m``, or ``None`` when ``ty``
    holds no tensor (such values pass through unchanged). ``collect(v, ids)`` appends the
    value ids of ``v``'s tensors, in a fixed order; ``build(v, nxt)`` rebuilds ``v`` with
    each tensor replaced by ``nxt()``, taking them in that same order. Made once per
    (module, type) and kept while the module lives."""
    entry = _WALKERS.get(id(m))
    if entry is None or entry[0]() is not m:
        key = id(m)
        entry = _WALKERS[key] = (weakref.ref(m, lambda _r: _WALKERS.pop(key, None)), {})
    memo = entry[1]
    if ty not in memo:
        _make_walker(m, ty, memo)
    return memo[ty]


def _collect_leaf(v, ids):
    ids.append(v)


def _build_leaf(v, nxt):
    return nxt()


def _make_walker(m: Module, t: Type, memo: dict):
    if t in memo:
        return memo[t]
    if not has_tensor(m, t):
        memo[t] = None
        return None
    if isinstance(t, TensorType):
        memo[t] = w = (_collect_leaf, _build_leaf)
        return w
    if isinstance(t, TupleType):
        memo[t] = w = _tuple_walker(m, t, memo)
        return w
    # an ADT: recursive fields (the spine) are walked with an explicit stack
    slot: list = []  # filled below; a field of a mutually recursive type reaches it
    memo[t] = (lambda v, ids: slot[0](v, ids), lambda v, nxt: slot[1](v, nxt))
    adt = m.adt_map[t.name]
    mapping = dict(zip(adt.type_params, t.args))
    # per constructor: indices of the recursive fields; (index, walker, is a tensor) of
    # the others that hold a tensor (a field holding none is kept as it is)
    rec: dict[str, tuple[int, ...]] = {}
    conv: dict[str, tuple] = {}
    for c in adt.ctors:
        fts = [substitute(f, mapping) for f in c.fields]
        rec[c.name] = tuple(i for i, ft in enumerate(fts) if ft == t)
        conv[c.name] = tuple(
            (i, w, isinstance(ft, TensorType))
            for i, ft in enumerate(fts)
            if ft != t and (w := _make_walker(m, ft, memo)) is not None
        )
    linear = all(len(r) <= 1 for r in rec.values())
    rec1 = {c: (r[0] if r else None) for c, r in rec.items()}
    if linear and all(len(p) <= 1 and all(leaf for *_, leaf in p) for p in conv.values()):
        # a list of tensors (or any linear ADT with at most one tensor field per node):
        # one loop each way, without the general plan's per-field steps
        slot[:] = _linear_leaf_walker(
            {c: (p[0][0] if p else None, rec1[c]) for c, p in conv.items()}
        )
        memo[t] = tuple(slot)
        return memo[t]

    def spine(v):
        """Every node of ``v``'s recursive spine, parents before children."""
        if linear:
            order = []
            while True:
                order.append(v)
                i = rec1[v.ctor]
                if i is None:
                    return order
                v = v.fields[i]
        order, stack = [], [v]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(node.fields[i] for i in rec[node.ctor])
        return order

    def collect(v, ids):
        add = ids.append
        for node in reversed(spine(v)):
            fields = node.fields
            for i, (c, _), leaf in conv[node.ctor]:
                if leaf:
                    add(fields[i])
                else:
                    c(fields[i], ids)

    def build(v, nxt):
        make = AdtValue
        order = spine(v)
        if linear:  # children first: each node takes the one built before it
            done = None
            for node in reversed(order):
                ctor, fields = node.ctor, node.fields
                plan, r = conv[ctor], rec1[ctor]
                if plan or r is not None:
                    fields = list(fields)
                    for i, (_, b), leaf in plan:
                        fields[i] = nxt() if leaf else b(fields[i], nxt)
                    if r is not None:
                        fields[r] = done
                done = make(ctor, fields)
            return done
        made: dict[int, AdtValue] = {}
        for node in reversed(order):
            ctor = node.ctor
            fields = list(node.fields)
            for i, (_, b), leaf in conv[ctor]:
                fields[i] = nxt() if leaf else b(fields[i], nxt)
            for i in rec[ctor]:
                fields[i] = made[id(fields[i])]
            made[id(node)] = make(ctor, fields)
        return made[id(v)]

    slot[:] = [collect, build]
    memo[t] = (collect, build)
    return memo[t]


def _linear_leaf_walker(kinds: dict[str, tuple[int | None, int | None]]):
    """``(collect, build)`` for a linear ADT whose constructors hold at most one tensor
    each: ``kinds[ctor]`` is (the tensor field's index or None, the recursive field's
    index or None). Tensors are taken tail first, as the general walker takes them; a
    node with neither (a list's ``Nil``) holds nothing to replace and is kept."""

    def collect(v, ids):
        leaves = []
        add = leaves.append
        while True:
            li, r = kinds[v.ctor]
            fields = v.fields
            if li is not None:
                add(fields[li])
            if r is None:
                break
            v = fields[r]
        leaves.reverse()
        ids.extend(leaves)

    def build(v, nxt):
        make = AdtValue
        nodes = []
        add = nodes.append
        while True:
            add(v)
            r = kinds[v.ctor][1]
            if r is None:
                break
            v = v.fields[r]
        done = None
        for node in reversed(nodes):
            ctor = node.ctor
            li, r = kinds[ctor]
            if li == 0 and r == 1 and len(node.fields) == 2:  # Cons(x, rest)
                done = make(ctor, (nxt(), done))
            elif li is None and r is None:
                done = node
            else:
                fields = list(node.fields)
                if li is not None:
                    fields[li] = nxt()
                if r is not None:
                    fields[r] = done
                done = make(ctor, fields)
        return done

    # a list of tensors: from_handles_all can rebuild it in C (_lists_of_tensors)
    build.list_of_tensors = kinds == {"Cons": (0, 1), "Nil": (None, None)}
    return collect, build


def _tuple_walker(m: Module, t: TupleType, memo: dict):
    parts = tuple(
        (i, w) for i, ft in enumerate(t.fields) if (w := _make_walker(m, ft, memo)) is not None
    )

    def collect(v, ids):
        for i, (c, _) in parts:
            c(v[i], ids)

    def build(v, nxt):
        out = list(v)
        for i, (_, b) in parts:
            out[i] = b(v[i], nxt)
        return tuple(out)

    return collect, build


def converter(m: Module, ty: Type, leaf, memo: dict | None = None):
    """``conv(value)``: a value of type ``ty`` with every tensor ``x`` of type ``t``
    replaced by ``leaf(t)(x)``, or None when values of ``ty`` hold no tensor (they pass as
    they are), planned once per type instead of walked generically per value: per constructor, which fields are the recursive spine
    (walked with an explicit stack, so any depth works) and which hold tensors. A node
    none of whose fields changed is kept (parts without tensors are shared)."""
    memo = {} if memo is None else memo
    if not has_tensor(m, ty):
        return None
    if isinstance(ty, TensorType):
        return leaf(ty)
    if ty in memo:  # a type inside its own fields' types (mutual recursion): late-bound
        return memo[ty]
    if isinstance(ty, TupleType):
        subs = [converter(m, f, leaf, memo) for f in ty.fields]

        def conv_tuple(v):
            return tuple(x if c is None else c(x) for x, c in zip(v, subs))

        return conv_tuple
    assert isinstance(ty, AdtType), ty
    plans: dict[str, tuple[tuple[int, ...], tuple]] = {}
    memo[ty] = lambda v: conv_adt(v)
    adt = m.adt_map[ty.name]
    mapping = dict(zip(adt.type_params, ty.args))
    for c in adt.ctors:
        fts = [substitute(f, mapping) for f in c.fields]
        rec = tuple(i for i, ft in enumerate(fts) if ft == ty)
        subs = [(i, converter(m, ft, leaf, memo)) for i, ft in enumerate(fts) if ft != ty]
        plans[c.name] = (rec, tuple((i, s) for i, s in subs if s is not None))

    def conv_adt(v):
        order, stack = [], [v]
        push, pop, visit = stack.append, stack.pop, order.append
        while stack:
            node = pop()
            visit(node)
            for i in plans[node.ctor][0]:
                push(node.fields[i])
        done = {}
        make = AdtValue
        for node in reversed(order):
            rec, subs = plans[node.ctor]
            if not (rec or subs):
                done[id(node)] = node
                continue
            fields, changed = list(node.fields), False
            for i in rec:
                x = fields[i]
                y = done[id(x)]
                if y is not x:
                    fields[i], changed = y, True
            for i, sub in subs:
                x = fields[i]
                y = sub(x)
                if y is not x:
                    fields[i], changed = y, True
            done[id(node)] = make(node.ctor, fields) if changed else node
        return done[id(v)]

    if any(len(rec) > 1 for rec, _ in plans.values()):
        memo[ty] = conv_adt
        return conv_adt
    # at most one recursive field per constructor (a list): a chain, no stack, no dict
    steps = {name: (rec[0] if rec else -1, subs) for name, (rec, subs) in plans.items()}

    def conv_chain(v):
        chain, node = [], v
        while True:
            chain.append(node)
            i = steps[node.ctor][0]
            if i < 0:
                break
            node = node.fields[i]
        new = None
        make = AdtValue
        for node in reversed(chain):
            i, subs = steps[node.ctor]
            if i < 0 and not subs:
                new = node
                continue
            fields = list(node.fields)
            changed = i >= 0 and new is not fields[i]
            if changed:
                fields[i] = new
            for j, sub in subs:
                x = fields[j]
                y = sub(x)
                if y is not x:
                    fields[j], changed = y, True
            new = make(node.ctor, fields) if changed else node
        return new

    memo[ty] = conv_chain
    return conv_chain


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
