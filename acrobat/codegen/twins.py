"""Twin kernels: kernels whose code is the same but for the weights they read.

Specialization gives each weight binding of a function its own copy (BiRNN's ``rnn``
runs once with the forward weights and once, as ``rnn_dup1``, with the backward ones),
so its kernels come in twins: ``rnn_k1`` computes ``tanh(t + h U_fw^T)`` and
``rnn_dup1_k1`` ``tanh(t + h U_bw^T)``. Scheduled apart, a step of the two RNNs is two
launches of a few rows each. The runtime makes each group of twins one DFG kernel
(:meth:`acrobat.runtime.executor.Executor.join_twins`), so the scheduler batches both
directions' step together, and the backend runs such a batch as one call of the group
kernel (:func:`acrobat.codegen.numpy_kernels.compile_numpy_group`): the rows side by side,
elementwise work done once over all of them, each weight-reading op per member on its
rows (BiRNN small: 81 -> 42 launches at b8).

This module finds the twins and says where their weights differ, keeping only groups
whose differing weights the NumPy group kernel can split by member.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from acrobat.codegen.numpy_kernels import ELEMENTWISE_RULES, MAX_ROW_WEIGHT
from acrobat.ir.nodes import Function, Let, OpCall, ParamRef, Var
from acrobat.ir.traversal import post_order_map, walk
from acrobat.ir.types import TensorType


@dataclass(frozen=True)
class Twins:
    """Kernels (ids, in order) with the same code but for weights; ``varying`` maps each
    weight the first one reads where the others read another to the weight every member
    reads there (first member's name first)."""

    members: tuple[int, ...]
    varying: dict[str, tuple[str, ...]]


def _weights(f: Function) -> list[str]:
    return [e.name for e in walk(f.body) if isinstance(e, ParamRef)]


def _renaming(f0: Function, f: Function) -> dict[str, str] | None:
    """``f``'s weight -> ``f0``'s weight at the same place, when ``f`` is ``f0`` with its
    weights renamed one to one (same parameters, result and body otherwise); else None."""
    if f.params != f0.params or f.ret != f0.ret:
        return None
    w0, w = _weights(f0), _weights(f)
    if len(w0) != len(w):
        return None
    to0: dict[str, str] = {}
    from0: dict[str, str] = {}
    for a, b in zip(w0, w):
        if to0.setdefault(b, a) != a or from0.setdefault(a, b) != b:
            return None
    renamed = post_order_map(
        f.body, lambda e: dataclasses.replace(e, name=to0[e.name]) if isinstance(e, ParamRef) else e
    )
    return to0 if renamed == f0.body else None


def _uses_allowed(f: Function, varying: set[str]) -> bool:
    """Whether every read of a varying weight is one the group kernel splits by member:
    a ``dense``'s weight (rows of rank-1 inputs times a matrix) or resident bias, or an
    operand of an elementwise op when small (a bias added apart)."""
    body = f.body
    if not isinstance(body, Let):
        return False
    split = 0  # reads of a varying weight that the group kernel splits
    for b in body.bindings:
        if isinstance(b.value, ParamRef):
            continue  # a weight bound to a name: counted as a read not split, below
        for x in walk(b.value):
            if not isinstance(x, OpCall):
                continue
            for i, a in enumerate(x.args):
                if not (isinstance(a, ParamRef) and a.name in varying):
                    continue
                if x.op == "dense" and i == 1:
                    ok = (
                        isinstance(x.args[0], Var)
                        and isinstance(x.args[0].ty, TensorType)
                        and len(x.args[0].ty.shape) == 1
                        and len(a.ty.shape) == 2
                    )
                elif x.op == "dense" and i == 2:
                    ok = isinstance(x.args[1], ParamRef) and len(a.ty.shape) == 1
                elif x.op in ELEMENTWISE_RULES:
                    ok = isinstance(a.ty, TensorType) and math.prod(a.ty.shape) <= MAX_ROW_WEIGHT
                else:
                    ok = False
                if not ok:
                    return False
                split += 1
    # a varying weight read anywhere else (bound to a name, the body's result, a tuple)
    return split == sum(1 for x in walk(body) if isinstance(x, ParamRef) and x.name in varying)


def find_twins(functions: list[Function]) -> list[Twins]:
    """Groups of two or more kernels (by index in ``functions``) that are twins and whose
    weight reads a group kernel can split by member."""
    groups: list[Twins] = []
    taken: set[int] = set()
    for i, f0 in enumerate(functions):
        if i in taken:
            continue
        members = [i]
        maps: list[dict[str, str]] = []
        for j in range(i + 1, len(functions)):
            if j in taken:
                continue
            m = _renaming(f0, functions[j])
            if m is not None and any(a != b for b, a in m.items()):
                members.append(j)
                maps.append({a: b for b, a in m.items()})  # f0's weight -> f's
        if len(members) < 2:
            continue
        names = dict.fromkeys(_weights(f0))
        varying = {w: (w, *(m[w] for m in maps)) for w in names if any(m[w] != w for m in maps)}
        if not _uses_allowed(f0, set(varying)):
            continue
        taken.update(members)
        groups.append(Twins(tuple(members), varying))
    return groups
