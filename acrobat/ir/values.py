"""Run-time values of the modelling language and their checks.

* tensors are ``numpy.ndarray`` (float32 unless declared otherwise);
* host scalars are Python ``int`` / ``float`` / ``bool``;
* tuples are Python tuples;
* ADT values are :class:`AdtValue` (a constructor name and its fields).

Everything here walks values with an explicit stack, so a degenerate tree 10,000 levels
deep is checked, compared and converted without touching Python's recursion limit.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from acrobat.errors import InstanceError
from acrobat.ir.nodes import Module
from acrobat.ir.types import AdtType, FuncType, ScalarType, TensorType, TupleType, Type, substitute

_INT_T = ScalarType("int")


class AdtValue:
    """A constructed ADT value, e.g. ``AdtValue("Node", (left, right))``.

    Immutable, as the language's values are: its two slots are set once, when it is made
    (assigning one raises ``AttributeError``). That lets the native engine's maker
    (``acrobat/native/values.c``) leave the values it makes out of the cycle
    collector's lists when their fields hold nothing it tracks (arrays, numbers, strings,
    and values so made), as CPython does with tuples: a run's output lists are then never
    walked by the collector (:mod:`acrobat.native`, ``adt.h``)."""

    __slots__ = ("ctor", "fields")
    __acrobat_frozen__ = True  # read by adt.h: instances may be left untracked

    def __init__(self, ctor: str, fields: tuple[Any, ...] = ()):
        _set_ctor(self, ctor)
        _set_fields(self, tuple(fields))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"an AdtValue is immutable: {name!r} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"an AdtValue is immutable: {name!r} cannot be deleted")

    def __reduce__(self):
        return (AdtValue, (self.ctor, self.fields))

    def __eq__(self, other: object) -> bool:
        return values_equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{self.ctor}({', '.join(_short(f) for f in self.fields)})"


_set_ctor = AdtValue.ctor.__set__  # type: ignore[attr-defined]
_set_fields = AdtValue.fields.__set__  # type: ignore[attr-defined]


def _short(v: Any) -> str:
    if isinstance(v, AdtValue):
        return f"{v.ctor}(...)" if v.fields else f"{v.ctor}()"
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}"
    return repr(v)


def _host_number(v: Any) -> bool:
    return type(v) in (int, float)


def values_equal(a: Any, b: Any, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Structural equality of two values (tensors, and host floats, compared with
    ``allclose`` tolerances: ``|x - y| <= atol + rtol * |y|``, NaN equal to NaN)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, AdtValue) or isinstance(y, AdtValue):
            if not (isinstance(x, AdtValue) and isinstance(y, AdtValue)):
                return False
            if x.ctor != y.ctor or len(x.fields) != len(y.fields):
                return False
            stack.extend(zip(x.fields, y.fields))
        elif isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
            same_kind = type(x) is type(y) and isinstance(x, (tuple, list))
            if not same_kind or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            x, y = np.asarray(x), np.asarray(y)
            if x.shape != y.shape or not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                return False
        elif _host_number(x) and _host_number(y) and (type(x) is float or type(y) is float):
            # a host float (e.g. from item()) carries the rounding of the tensors it read
            if not (x == y or (x != x and y != y) or abs(x - y) <= atol + rtol * abs(y)):
                return False
        elif x != y:
            return False
    return True


def from_list(items: Iterable[Any]) -> AdtValue:
    """A Python sequence as a ``List`` value (``Cons(x0, Cons(x1, ... Nil()))``). (A
    runtime's engine may make them faster: ``Engine.maker.list``.)"""
    out = AdtValue("Nil")
    for x in reversed(list(items)):
        out = AdtValue("Cons", (x, out))
    return out


def to_list(v: AdtValue) -> list[Any]:
    """A ``List`` value as a Python list."""
    out = []
    while v.ctor == "Cons":
        out.append(v.fields[0])
        v = v.fields[1]
    return out


def check_value(m: Module, value: Any, ty: Type, index: int | None = None, what: str = "") -> None:
    """Raise :class:`InstanceError` if ``value`` is not a value of type ``ty``.

    The common case (the value fits) is a lean loop with per-type field tables; only
    when something is wrong is the value walked again to say where.
    """
    if not _fits(m, value, ty):
        _explain_mismatch(m, value, ty, index, what or "the input")


_TABLES: dict[int, tuple] = {}  # id(module) -> (weak reference to it, its field tables)


def _tables(m: Module) -> dict:
    """The field tables of :func:`_fields_table` for module ``m``, kept while it lives."""
    entry = _TABLES.get(id(m))
    if entry is None or entry[0]() is not m:
        key = id(m)
        entry = _TABLES[key] = (weakref.ref(m, lambda _r: _TABLES.pop(key, None)), {})
    return entry[1]


def _fields_table(m: Module, t: AdtType, cache: dict) -> dict[str, tuple]:
    """Per constructor: (number of fields, [(index, type)] of the fields to check apart,
    indices of the int fields, index of the recursive field the check continues with or
    ``None``). Keyed by identity (the entry keeps ``t`` alive, so the id stays its own):
    the types inside come from here."""
    entry = cache.get(id(t))
    if entry is None:
        adt = m.adt_map[t.name]
        mapping = dict(zip(adt.type_params, t.args))
        table = {}
        for c in adt.ctors:
            # a recursive field gets ``t`` itself, so the identity cache hits on every node
            fts = [t if (f := substitute(f0, mapping)) == t else f for f0 in c.fields]
            ints = tuple(i for i, f in enumerate(fts) if f == _INT_T)
            recs = [i for i, f in enumerate(fts) if f is t]
            last = recs[-1] if recs else None
            others = [(i, f) for i, f in enumerate(fts) if f != _INT_T and i != last]
            table[c.name] = (len(fts), others, ints, last)
        entry = cache[id(t)] = (t, table)
    return entry[1]


def _fits(m: Module, value: Any, ty: Type) -> bool:
    return _checker(m, ty)(value)


def _checker(m: Module, ty: Type, many: bool = False, walk=None):
    """``fits(value) -> bool`` for values of ``ty``: what it needs (field tables, the leaf
    check) found once, for checking many values; ``walk``: a native walk of values
    (``checks.fits`` of a runtime's engine) that does it in C, or None: Python. ``many``:
    instead ``fits_all(values: list) -> int``, the index of the first value that does not
    fit or -1, in one call of ``walk``; None (not offered) for other than ADT and tuple
    types or without ``walk``."""
    if many and (type(ty) not in (AdtType, TupleType) or walk is None):
        return None
    if type(ty) is TensorType:  # a leaf: _mismatch's test, its constants made once
        shape, dtype = ty.shape, np.dtype(ty.dtype)
        return lambda v: isinstance(v, np.ndarray) and v.shape == shape and v.dtype == dtype
    if type(ty) is ScalarType:
        return lambda value: _mismatch(m, value, ty) is None
    cache = _tables(m)
    if walk is None:
        return lambda value: _fits_python(m, value, ty, cache)
    fits = walk  # the same walk in C (acrobat/native/values.c): ~10x faster

    def tables(t):
        return _fields_table(m, t, cache)

    def leaf(v, t):
        return _mismatch(m, v, t) is None

    if many:
        return lambda values: fits(values, ty, tables, AdtType, TupleType, leaf, True)
    return lambda value: fits(value, ty, tables, AdtType, TupleType, leaf)


def _fits_python(m: Module, value: Any, ty: Type, cache: dict) -> bool:
    stack = [(value, ty)]
    while stack:
        v, t = stack.pop()
        tt = type(t)
        if tt is AdtType:
            table = _fields_table(m, t, cache)
            while True:  # along the recursive spine without the stack (a list's tail)
                if type(v) is not AdtValue:
                    return False
                plan = table.get(v.ctor)
                fields = v.fields
                if plan is None or plan[0] != len(fields):
                    return False
                for i in plan[2]:
                    if type(fields[i]) is not int:
                        return False
                for i, ft in plan[1]:
                    stack.append((fields[i], ft))
                if plan[3] is None:
                    break
                v = fields[plan[3]]
        elif tt is TupleType:
            if type(v) is not tuple or len(v) != len(t.fields):
                return False
            stack.extend(zip(v, t.fields))
        elif _mismatch(m, v, t):
            return False
    return True


def _explain_mismatch(m: Module, value: Any, ty: Type, index, what: str) -> None:
    """Walk again with paths and raise the first mismatch found."""
    stack: list[tuple[Any, Type, str]] = [(value, ty, what)]
    while stack:
        v, t, where = stack.pop()
        err = _mismatch(m, v, t)
        if err:
            raise InstanceError(f"{where}: {err}", index)
        if isinstance(t, TupleType):
            stack.extend((x, ft, f"{where}[{i}]") for i, (x, ft) in enumerate(zip(v, t.fields)))
        elif isinstance(t, AdtType):
            adt, tag = m.ctor_map[v.ctor]
            fields = adt.ctors[tag].fields
            mapping = dict(zip(adt.type_params, t.args))
            # a short path: deep recursive values would otherwise build huge strings
            inner = f"{v.ctor} field" if len(where) > 60 else f"{where} -> {v.ctor}"
            stack.extend(
                (x, substitute(ft, mapping), f"{inner} {i}")
                for i, (x, ft) in enumerate(zip(v.fields, fields))
            )


def _mismatch(m: Module, v: Any, t: Type) -> str | None:
    if isinstance(t, TensorType):
        if not isinstance(v, np.ndarray):
            return f"expected a tensor {t} (numpy array), got {type(v).__name__}"
        if v.shape != t.shape:
            return f"expected shape {list(t.shape)}, got {list(v.shape)}"
        if v.dtype != np.dtype(t.dtype):
            return f"expected dtype {t.dtype}, got {v.dtype} (use .astype(np.{t.dtype}))"
        return None
    if isinstance(t, ScalarType):
        py = {"int": int, "float": (int, float), "bool": bool}[t.kind]
        ok = isinstance(v, py) or isinstance(v, np.generic) and t.kind != "bool"
        if not ok or (t.kind == "int" and isinstance(v, bool)):
            return f"expected a host {t.kind}, got {type(v).__name__} {v!r}"
        return None
    if isinstance(t, TupleType):
        if not isinstance(v, tuple) or len(v) != len(t.fields):
            return f"expected a tuple of {len(t.fields)}, got {_short(v)}"
        return None
    if isinstance(t, AdtType):
        if not isinstance(v, AdtValue):
            return f"expected a {t} value (AdtValue), got {type(v).__name__}"
        if v.ctor not in m.ctor_map or m.ctor_map[v.ctor][0].name != t.name:
            return f"expected a {t} value, got constructor {v.ctor!r}"
        adt, tag = m.ctor_map[v.ctor]
        if len(v.fields) != len(adt.ctors[tag].fields):
            return f"{v.ctor} takes {len(adt.ctors[tag].fields)} field(s), got {len(v.fields)}"
        return None
    if isinstance(t, FuncType):
        return "function values cannot be inputs"
    return f"unsupported type {t}"


def entry_args(m: Module, instance: Any, index: int | None = None) -> tuple[Any, ...]:
    """The entry function's arguments for one instance, checked.

    An entry with one parameter takes the value itself; with several, a tuple holding
    one value per parameter.
    """
    return _entry_checker(m)(instance, index)


def entry_args_all(m: Module, instances: list, checks=None) -> list[tuple[Any, ...]]:
    """:func:`entry_args` of every instance, in order (the first that does not fit raises,
    naming its index), with the checks' setup made once: 64 instances cost ~160 us one by
    one, most of it that setup. An entry of one ADT or tuple parameter checks them all in
    one native call (``maker.fits`` of the list): BiRNN small b64's 64 token lists, 80 ->
    ~40 us (timeit); an entry of tensor parameters, in one ``tensors_fit`` call (DRNN
    small b64's 64 pairs of arrays, 61 -> 3 us, timeit). Where one does not fit, or the
    native check cannot vouch for it, each is checked again as before, so the error is
    the same. ``checks``: a runtime engine's bulk checks (``fits``, ``tensors_fit``), or
    None: each instance in Python."""
    params = m.main.params
    if type(instances) is list and params and checks is not None:
        if all(type(p.ty) is TensorType for p in params):
            specs = tuple((p.ty.shape, np.dtype(p.ty.dtype)) for p in params)
            if checks.tensors_fit(instances, specs, len(params) == 1) < 0:
                return [(x,) for x in instances] if len(params) == 1 else list(instances)
        elif len(params) == 1:
            fits_all = _checker(m, params[0].ty, many=True, walk=checks.fits)
            if fits_all is not None and fits_all(instances) < 0:  # all fit: one native call
                return [(x,) for x in instances]
    check = _entry_checker(m, checks)  # (a misfit: each checked again, the first explained)
    return [check(x, i) for i, x in enumerate(instances)]


def _entry_checker(m: Module, bulk=None):
    """``check(instance, index) -> arguments``: :func:`entry_args` with each parameter's
    :func:`_checker` made once (``bulk``: :func:`entry_args_all`'s ``checks``)."""
    params = m.main.params
    walk = bulk.fits if bulk is not None else None
    checks = [(p, _checker(m, p.ty, walk=walk)) for p in params]
    if len(params) == 1:  # the instance is the argument (the common case: kept lean)
        ((p, fits),) = checks

        def check_one(instance: Any, index: int | None) -> tuple[Any, ...]:
            if not fits(instance):
                _explain_mismatch(m, instance, p.ty, index, f"argument {p.name}")
            return (instance,)

        return check_one

    def check(instance: Any, index: int | None) -> tuple[Any, ...]:
        if not isinstance(instance, tuple) or len(instance) != len(params):
            raise InstanceError(
                f"{m.entry} takes {len(params)} arguments; pass a tuple of {len(params)} values",
                index,
            )
        for (p, fits), a in zip(checks, instance):
            if not fits(a):
                _explain_mismatch(m, a, p.ty, index, f"argument {p.name}")
        return instance

    return check


def check_params(m: Module, params: Mapping[str, np.ndarray]) -> None:
    """Every declared weight is present with its declared shape and dtype."""
    for p in m.params:
        if p.name not in params:
            raise InstanceError(
                f"no value for parameter {p.name!r}", hint="pass params=init_params(module)"
            )
        err = _mismatch(m, params[p.name], p.ty)
        if err:
            raise InstanceError(f"parameter {p.name}: {err}")


def init_params(m: Module, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded weights for every declared parameter (uniform in +-1/sqrt(fan_in))."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in m.params:
        fan_in = p.ty.shape[-1] if p.ty.shape else 1
        bound = 1.0 / np.sqrt(fan_in)
        out[p.name] = rng.uniform(-bound, bound, size=p.ty.shape).astype(p.ty.dtype)
    return out
