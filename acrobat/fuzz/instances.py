"""Random instances for a parsed module's entry function, drawn from a ChoiceSource.

Option 0 of every draw is the simplest value: a zero int, ``0.0``, ``False``, the first
non-recursive constructor, an empty list, the tensor of seed 0. Ints are mostly 0..3
(they index embeddings and bound loops); now and then negative, past the vocabulary or
``2**63``, so typed errors are exercised. Lists are 0..6 long, sometimes 30+; recursive
ADTs are depth-bounded, sometimes a long degenerate chain.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from acrobat.fuzz.choices import ChoiceSource
from acrobat.ir.nodes import Module
from acrobat.ir.types import AdtType, ScalarType, TensorType, TupleType, Type, substitute
from acrobat.ir.values import AdtValue, from_list

__all__ = ["generate_instances"]


def generate_instances(module: Module, src: ChoiceSource, n: int) -> list:
    """``n`` instances for ``module.main``: one value per instance for a one-parameter
    entry, a tuple of values otherwise (what :func:`acrobat.ir.values.entry_args` takes)."""
    g = _Instances(module, src)
    params = module.main.params
    out = []
    for _ in range(n):
        vals = tuple(g.value(p.ty, g.budget()) for p in params)
        out.append(vals[0] if len(vals) == 1 else vals)
    return out


class _Instances:
    def __init__(self, module: Module, src: ChoiceSource):
        self.m, self.src = module, src
        self.heights: dict[Type, float] = {}

    def budget(self) -> int:
        return 40 if self.src.weighted([(12, False), (1, True)]) else self.src.integer(0, 4)

    def ctors(self, t: AdtType) -> list[tuple[str, list[Type]]]:
        """Constructors with concrete field types, the shallowest first."""
        adt = self.m.adt_map[t.name]
        mapping = dict(zip(adt.type_params, t.args))
        cs = [(c.name, [substitute(f, mapping) for f in c.fields]) for c in adt.ctors]
        return sorted(cs, key=lambda c: self.ctor_height(c[1], frozenset([t])))

    def ctor_height(self, fields: list[Type], seen: frozenset) -> float:
        return 1 + max((self.height(f, seen) for f in fields), default=0)

    def height(self, t: Type, seen: frozenset) -> float:
        if isinstance(t, TupleType):
            return max((self.height(f, seen) for f in t.fields), default=0)
        if not isinstance(t, AdtType):
            return 0
        if t in seen:
            return math.inf
        if t in self.heights:
            return self.heights[t]
        adt = self.m.adt_map[t.name]
        mapping = dict(zip(adt.type_params, t.args))
        h = min(
            self.ctor_height([substitute(f, mapping) for f in c.fields], seen | {t})
            for c in adt.ctors
        )
        if not seen:
            self.heights[t] = h
        return h

    def value(self, t: Type, budget: int) -> Any:
        if isinstance(t, TensorType):
            rng = np.random.default_rng(self.src.integer(0, 1 << 20))
            return rng.standard_normal(t.shape).astype(t.dtype)
        if isinstance(t, ScalarType):
            if t.kind == "bool":
                return self.src.boolean()
            if t.kind == "float":
                mag = self.src.integer(0, 30) / 10
                return -mag if self.src.boolean() else mag
            kind = self.src.weighted([(30, "small"), (1, "neg"), (1, "big"), (1, "huge")])
            if kind == "small":
                return self.src.integer(0, 3)
            if kind == "neg":
                return -self.src.integer(1, 3)
            if kind == "big":
                return self.src.integer(4, 12)
            return 2**63
        if isinstance(t, TupleType):
            return tuple(self.value(f, budget) for f in t.fields)
        assert isinstance(t, AdtType)
        if t.name == "List":
            n = self.src.weighted([(20, "short"), (1, "long")])
            n = self.src.integer(0, 6) if n == "short" else self.src.integer(30, 40)
            return from_list([self.value(t.args[0], min(budget - 1, 4)) for _ in range(n)])
        return self.adt(t, budget)

    def adt(self, t: AdtType, budget: int) -> AdtValue:
        """Depth-bounded; a budget of 40 or more builds a chain (one deep spine)."""
        ctors = self.ctors(t)
        if budget >= 40:  # a chain: recurse into the first field of the same type
            rec = [c for c in ctors if t in c[1]]
            if rec:
                name, fields = rec[0]
                depth = self.src.integer(30, 40)
                v = self.adt(t, 0)
                for _ in range(depth):
                    fs = []
                    used = False
                    for f in fields:
                        if f == t and not used:
                            fs.append(v)
                            used = True
                        else:
                            fs.append(self.value(f, 0))
                    v = AdtValue(name, tuple(fs))
                return v
            budget = 4
        name, fields = ctors[0] if budget <= 0 else self.src.choice(ctors)
        return AdtValue(name, tuple(self.value(f, min(budget - 1, 4)) for f in fields))
