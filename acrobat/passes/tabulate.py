"""TabulateEmbeddings: compute once per table row what depends on one embedding row alone.

Pattern: in one block, ``x = embed($E, w)`` (``w`` a host int) followed by tensor ops whose
operands are ``x``, values computed from it, weights and constants -- a TreeLSTM leaf,
``split(dense(embed($E, w), $W, $b), 3)`` and its gates. Every such value is a function of
the row number ``w`` alone, and there are only ``V`` rows, so the compiler can know them
all: the weights are given to ``compile`` (the same knowledge that folds weight-only
expressions, docs/paper.md section 1).

Steps, per block and per index variable ``w``:

1. the *region*: the block's bindings that depend on rows of tables indexed by ``w`` and
   on nothing per-instance besides (weights and tensor constants are allowed operands);
2. its *exports*: the region's values read outside it (later bindings, the block's body);
   each must be a 1-d tensor;
3. evaluate the region once per row ``v = 0 .. V-1`` with the reference op
   implementations (those of ``acrobat.evaluate``) and stack each export into a derived
   weight ``$_tab<k>`` of shape ``[V, n]``;
4. bind each export to ``embed($_tab<k>, w)`` instead and drop the rest of the region.

Guards: the region does some work besides data movement (at least one op that is not
``embed`` or injective); the tables take at most :data:`TABLE_BYTES`; evaluated row by row
(where an op has no stacked form) it makes at most :data:`EVAL_BUDGET` op calls. An export
that is itself a lookup of a given table stays that lookup. ``V`` is the smallest row count
of the region's tables, so the new lookup rejects exactly the ids that one of the region's
lookups rejected: the same typed error for the same instance.

Needs ANF (one op per binding). Same values as the interpreter (the same op
implementations on the same rows), one cheap lookup per instance instead of the work.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from acrobat.ir.nodes import (
    Binding,
    Const,
    Expr,
    Let,
    Module,
    OpCall,
    ParamDef,
    ParamRef,
    Proj,
    Var,
)
from acrobat.ir.ops import REGISTRY, OpKind
from acrobat.ir.traversal import post_order_map, var_names
from acrobat.ir.types import TensorType
from acrobat.passes.base import PassContext, Property

TABLE_BYTES = 64 << 20
"""The most memory the tables of one region may take (bytes)."""

EVAL_BUDGET = 400_000
"""The most op calls evaluating a region row by row may make (rows x ops; a few seconds at
worst). Regions whose ops all have a stacked form are evaluated in one call per op."""

_COMPUTE_KINDS = (OpKind.ELEMWISE, OpKind.BROADCAST, OpKind.REDUCTION, OpKind.OPAQUE)
_ROW_KINDS = _COMPUTE_KINDS + (OpKind.INJECTIVE,)


class TabulateEmbeddings:
    """Replace work that depends on one embedding row alone by a lookup in a table of it."""

    name = "TabulateEmbeddings"
    requires = frozenset({Property.ANF})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.embedding_tables:
            return module
        new_params: list[ParamDef] = []
        cache: dict[tuple, str] = {}  # canonical export expression -> its table

        def rewrite(e: Expr) -> Expr:
            if not isinstance(e, Let):
                return e
            return self._block(e, ctx, cache, new_params)

        fns = tuple(
            dataclasses.replace(f, body=post_order_map(f.body, rewrite)) for f in module.functions
        )
        return dataclasses.replace(module, params=module.params + tuple(new_params), functions=fns)

    def _block(self, e: Let, ctx: PassContext, cache: dict, new_params: list) -> Let:
        region = _regions(e.bindings)
        if not region:
            return e
        replaced: dict[str, Binding] = {}  # export -> its lookup
        dropped: set[str] = set()
        for index in sorted(set(region.values())):
            members = [b for b in e.bindings if region.get(b.var.name) == index]
            names = {b.var.name for b in members}
            exports = _exports(e, names)
            plan = _plan(members, exports, ctx.params)
            if plan is None:
                continue
            rows, defs, tabulated = plan
            seed = next(b.value for b in members if _is_lookup(b.value))
            keys = {x: _canon(x, defs) for x in tabulated}
            if all(key in cache for key in keys.values()):
                tables = {}
            else:
                # rows no instance may ever use can overflow (a sigmoid of a large row):
                # their values are what the interpreter would compute, without its warning
                with np.errstate(all="ignore"):
                    tables = _evaluate(members, defs, tabulated, rows, index, ctx.params)
                if tables is None:
                    continue
            looked_up = []
            for i, x in enumerate(tabulated):
                key = keys[x]
                name = cache.get(key)
                if name is None:
                    derived = ctx.derive("_tab", tables[x])
                    new_params.append(derived)
                    name = cache[key] = derived.name
                b = defs[x]
                table = ParamRef(name, ty=TensorType((rows,) + b.var.ty.shape, b.var.ty.dtype))
                # the first lookup stands where the region's first embed was (source line
                # maps then name the embedding and the lines of the work it replaces)
                span = seed.span if i == 0 else getattr(b.value, "span", None)
                replaced[x] = Binding(
                    b.var, OpCall("embed", (table, seed.args[1]), ty=b.var.ty, span=span)
                )
                looked_up.append(f"${name}")
            dropped |= names - set(exports)  # a plain lookup read outside stays as it is
            work = sum(1 for b in members if isinstance(b.value, OpCall))
            size = sum(ctx.params[t[1:]].nbytes for t in looked_up)
            ctx.note(
                self.name,
                f"{', '.join(tabulated)}: {work} ops on a row of {_tables_of(members)} -> "
                f"rows of {', '.join(looked_up)} by {index} [{rows} rows, {_bytes(size)}]",
            )
        if not replaced:
            return e
        out = []
        for b in e.bindings:
            name = b.var.name
            if name in replaced:
                out.append(replaced[name])
            elif name not in dropped:
                out.append(b)
        return dataclasses.replace(e, bindings=tuple(out))


def _regions(bindings) -> dict[str, str]:
    """Variable -> the index variable whose rows alone it depends on (see the module
    docstring, step 1)."""
    region: dict[str, str] = {}
    for b in bindings:
        v, name = b.value, b.var.name
        if isinstance(v, Var) and v.name in region:
            region[name] = region[v.name]
        elif isinstance(v, Proj) and isinstance(v.tup, Var) and v.tup.name in region:
            region[name] = region[v.tup.name]
        elif isinstance(v, OpCall) and v.op == "embed":
            table, idx = v.args
            if isinstance(table, ParamRef) and isinstance(idx, Var) and idx.name not in region:
                region[name] = idx.name
        elif isinstance(v, OpCall) and REGISTRY[v.op].kind in _ROW_KINDS:
            deps = set()
            for a in v.args:
                if isinstance(a, Var) and a.name in region:
                    deps.add(region[a.name])
                elif not (
                    isinstance(a, ParamRef)
                    or (isinstance(a, Const) and isinstance(a.ty, TensorType))
                ):
                    deps = set()
                    break
            if len(deps) == 1:
                region[name] = deps.pop()
    return region


def _exports(e: Let, names: set[str]) -> list[str]:
    """The region's variables read outside it, in binding order."""
    read: set[str] = var_names(e.body)
    for b in e.bindings:
        if b.var.name not in names:
            read |= var_names(b.value)
    return [b.var.name for b in e.bindings if b.var.name in names and b.var.name in read]


def _plan(members, exports, params) -> tuple[int, dict[str, Binding], list[str]] | None:
    """``(rows, name -> binding, the exports to tabulate)`` when the region passes the
    guards, else ``None``. An export that is a lookup of a given table is read from that
    table as before; the others get tables."""
    defs = {b.var.name: b for b in members}
    tabulated = [x for x in exports if not _is_lookup(defs[x].value)]
    if not tabulated or not any(
        isinstance(b.value, OpCall)
        and not _is_lookup(b.value)
        and REGISTRY[b.value.op].kind in _COMPUTE_KINDS
        for b in members
    ):
        return None
    for x in tabulated:
        ty = defs[x].var.ty
        if not (isinstance(ty, TensorType) and len(ty.shape) == 1 and ty.shape[0] > 0):
            return None
    rows = min(params[b.value.args[0].name].shape[0] for b in members if _is_lookup(b.value))
    if rows == 0:
        return None
    table_bytes = sum(
        rows * _width(defs[x]) * np.dtype(defs[x].var.ty.dtype).itemsize for x in tabulated
    )
    if table_bytes > TABLE_BYTES:
        return None
    return rows, defs, tabulated


def _width(b: Binding) -> int:
    return int(b.var.ty.shape[0])


def _evaluate(
    members, defs, exports, rows: int, index: str, params
) -> dict[str, np.ndarray] | None:
    """Every export's value for every row, stacked: ``[rows, n]`` each. All rows at once
    where every op of the region has a stacked form (:func:`_stacked`), else row by row
    (``None`` when that would make more than :data:`EVAL_BUDGET` op calls)."""
    env = _walk(members, lambda e, env: _stacked(e, env, rows, params))
    if env is not None:
        return {x: np.ascontiguousarray(env[x], dtype=defs[x].var.ty.dtype) for x in exports}
    if rows * sum(isinstance(m.value, OpCall) for m in members) > EVAL_BUDGET:
        return None
    return _row_by_row(members, defs, exports, rows, index, params)


def _walk(members, op) -> dict[str, Any] | None:
    """The region's values, each op's from ``op(call, values so far)`` (``None`` from it
    stops the walk and is returned)."""
    env: dict[str, Any] = {}
    for b in members:
        e = b.value
        if isinstance(e, Var):
            env[b.var.name] = env[e.name]
        elif isinstance(e, Proj):
            env[b.var.name] = env[e.tup.name][e.index]
        else:
            value = op(e, env)
            if value is None:
                return None
            env[b.var.name] = value
    return env


def _stacked(e: OpCall, env: dict[str, Any], rows: int, params):
    """``e`` applied to all rows at once (region values stacked along a new first axis),
    or ``None`` where the reference implementation is not known to allow that."""
    kind = REGISTRY[e.op].kind
    attrs = dict(e.attrs)
    args, ranks = [], []  # per-row rank of each region operand, None for the others
    for a in e.args:
        if isinstance(a, Var) and a.name in env:
            args.append(env[a.name])
            ranks.append(len(a.ty.shape))
        elif isinstance(a, Var):  # the index
            args.append(np.arange(rows))
            ranks.append(None)
        else:
            args.append(
                params[a.name] if isinstance(a, ParamRef) else np.asarray(a.value, a.ty.dtype)
            )
            ranks.append(None)
    region = [r for r in ranks if r is not None]
    if e.op == "embed":
        return args[0][args[1]]
    if kind in (OpKind.ELEMWISE, OpKind.BROADCAST):
        others = [np.ndim(x) for x, r in zip(args, ranks) if r is None]
        if len(set(region)) == 1 and all(o <= region[0] for o in others):
            return REGISTRY[e.op].impl(*args, **attrs)
        return None
    if e.op == "dense" and ranks[0] == 1 and all(r is None for r in ranks[1:]):
        return REGISTRY[e.op].impl(*args)
    if e.op in ("split", "slice", "concat") and all(r is not None for r in ranks):
        if len(set(ranks)) != 1:
            return None
        attrs["axis"] = attrs.get("axis", 0) % ranks[0] + 1
        return REGISTRY[e.op].impl(*args, **attrs)
    return None


def _row_by_row(members, defs, exports, rows: int, index: str, params) -> dict[str, np.ndarray]:
    """:func:`_evaluate` one row at a time: the interpreter's own evaluation of each row."""
    types = {x: defs[x].var.ty for x in exports}
    out = {x: np.empty((rows,) + types[x].shape, types[x].dtype) for x in exports}

    def value(a: Expr, env: dict[str, Any], v: int):
        if isinstance(a, ParamRef):
            return params[a.name]
        if isinstance(a, Var):
            return v if a.name == index else env[a.name]
        return np.asarray(a.value, dtype=a.ty.dtype)

    for v in range(rows):
        env = _walk(
            members,
            lambda e, env, v=v: REGISTRY[e.op].impl(
                *(value(a, env, v) for a in e.args), **dict(e.attrs)
            ),
        )
        for x in exports:
            out[x][v] = env[x]
    return out


def _canon(x: str, defs: dict[str, Binding]) -> tuple:
    """The export's defining expression with variables replaced by their definitions: equal
    for the same work on the same tables, whatever the variables are called."""
    e = defs[x].value
    if isinstance(e, Var):
        return _canon(e.name, defs) if e.name in defs else ("index",)
    if isinstance(e, Proj):
        return ("proj", _canon(e.tup.name, defs), e.index)
    args = []
    for a in e.args:
        if isinstance(a, Var):
            args.append(_canon(a.name, defs) if a.name in defs else ("index",))
        elif isinstance(a, ParamRef):
            args.append(("$", a.name))
        else:
            args.append(("c", a.value, str(a.ty)))
    return (e.op, tuple(args), e.attrs, str(defs[x].var.ty))


def _bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _is_lookup(e: Expr) -> bool:
    return isinstance(e, OpCall) and e.op == "embed"


def _tables_of(members) -> str:
    names = sorted({b.value.args[0].name for b in members if _is_lookup(b.value)})
    return ", ".join(f"${n}" for n in names)
