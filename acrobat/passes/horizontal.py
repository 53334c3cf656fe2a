"""BatchHorizontally: merge independent dense ops on one input (docs/paper.md §2).

Pattern: in a straight-line block, two or more independent ``dense(x, $W_i[, $b_i])``
with the SAME input ``x`` and weights of the same input width — the gate projections of
a GRU (``W_z x``, ``W_r x``, ``W_n x``) or of a child-sum TreeLSTM. Steps: concatenate
the weights (and biases) at compile time into one derived weight ``_hcat<k>`` (rows
stacked), replace the first op by one ``dense(x, $_hcat<k>[, $_hbias<k>])`` followed by
``slice``s that give each original result its rows. One bigger matrix product replaces
several small ones, for every instance and every batch.

Why it is correct: row block i of ``[W_1; ...; W_n] x + [b_1; ...; b_n]`` is
``W_i x + b_i``. The ops are independent (neither reads the other), and the merged op
is placed at the first one's position: every operand (``x``, weights) is defined there.
Independent dense ops on different inputs are not merged (stacking inputs only moves
copies around on a CPU).

Same results.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from acrobat.ir.nodes import Binding, Expr, Let, Module, OpCall, ParamDef, ParamRef, Var
from acrobat.ir.types import TensorType
from acrobat.passes.base import NameSupply, PassContext, Property, map_host_functions


def _candidate(v: Expr):
    """(input name, weight, bias) of a ``dense`` on a variable with weight operands."""
    if not (isinstance(v, OpCall) and v.op == "dense" and isinstance(v.args[0], Var)):
        return None
    if not all(isinstance(a, ParamRef) for a in v.args[1:]):
        return None
    if len(v.args[1].ty.shape) != 2 or len(v.ty.shape) != 1:
        return None
    return v.args[0].name, v.args[1], v.args[2] if len(v.args) > 2 else None


class BatchHorizontally:
    """Merge same-input dense ops into one dense on concatenated weights."""

    name = "BatchHorizontally"
    requires = frozenset({Property.ANF, Property.SPECIALIZED})  # weights are ``$W`` operands

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.horizontal_batching:
            return module
        self.new_params: list[ParamDef] = []
        self.cache: dict[tuple, tuple[str, str | None]] = {}
        fns = map_host_functions(module, lambda f, names, _: lambda e: self.block(e, names, ctx, f))
        return dataclasses.replace(
            module, params=module.params + tuple(self.new_params), functions=fns
        )

    def block(self, e: Expr, names: NameSupply, ctx: PassContext, f) -> Expr:
        if not isinstance(e, Let):
            return e
        groups: dict[tuple, list[int]] = {}
        for i, b in enumerate(e.bindings):
            c = _candidate(b.value)
            if c is not None:
                x, w, bias = c
                groups.setdefault((x, w.ty.shape[1], bias is None), []).append(i)
        merged: dict[int, list[Binding]] = {}
        drop: set[int] = set()
        for idx in groups.values():
            if len(idx) < 2:
                continue
            ops = [e.bindings[i] for i in idx]
            merged[idx[0]] = self.merge(ops, names, ctx, f.name)
            drop.update(idx[1:])
        if not merged:
            return e
        out: list[Binding] = []
        for i, b in enumerate(e.bindings):
            if i in merged:
                out.extend(merged[i])
            elif i not in drop:
                out.append(b)
        return dataclasses.replace(e, bindings=tuple(out))

    def merge(self, ops: list[Binding], names: NameSupply, ctx: PassContext, fn: str):
        ws = [b.value.args[1].name for b in ops]
        bs = [b.value.args[2].name for b in ops] if len(ops[0].value.args) > 2 else None
        key = (tuple(ws), tuple(bs) if bs else None)
        if key not in self.cache:
            wname = self.derive(ctx, "_hcat", np.concatenate([ctx.params[w] for w in ws]))
            bname = (
                self.derive(ctx, "_hbias", np.concatenate([ctx.params[b] for b in bs]))
                if bs
                else None
            )
            self.cache[key] = (wname, bname)
            ctx.note(self.name, f"{fn}: dense on one input with {', '.join(ws)} -> ${wname}")
        wname, bname = self.cache[key]
        x = ops[0].value.args[0]
        rows = ctx.params[wname].shape[0]
        wide = TensorType((rows,))
        args = (x, ParamRef(wname, ty=ctx_type(ctx, wname)))
        if bname:
            args += (ParamRef(bname, ty=ctx_type(ctx, bname)),)
        tmp = Var(names.fresh("hcat"), ty=wide)
        out = [Binding(tmp, OpCall("dense", args, ty=wide))]
        start = 0
        for b in ops:
            n = b.value.ty.shape[0]
            attrs = (("axis", 0), ("start", start), ("stop", start + n))
            out.append(Binding(b.var, OpCall("slice", (tmp,), attrs, ty=b.value.ty)))
            start += n
        return out

    def derive(self, ctx: PassContext, base: str, value: np.ndarray) -> str:
        derived = ctx.derive(base, np.ascontiguousarray(value))
        self.new_params.append(derived)
        return derived.name


def ctx_type(ctx: PassContext, name: str) -> TensorType:
    v = ctx.params[name]
    return TensorType(v.shape, str(v.dtype))
