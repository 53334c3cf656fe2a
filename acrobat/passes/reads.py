"""ReadsLast: work that does not need a read's value goes before the read (docs/paper.md §4).

Pattern: a block that reads a tensor value (``item``/``argmax``, or a call of a fiber
function, which may read) and then does work that does not depend on that value, e.g.
DRNN's ``item(p[0:1]) > 0.3 ...`` followed by ``p[1:2]`` and the second ``item``. A read
suspends the instance until the pending DFG has been executed, so everything written
after it waits for a whole extra round (a flush of the DFG, and the depth restarts at the
phase's base: ``codegen/host.py``), and fusion cannot put ``p[1:2]`` in the kernel that
computes ``p`` (a read closes the group). The language is pure, so only data orders a
block: the pass moves every binding that depends on no read (directly or through other
bindings) above the reads, keeping the order of the rest.

Rules, per block, in one scan: a read and everything that depends on one waits
(``pending``); any other binding is emitted at once, ahead of the waiting ones, except
that two bindings that may fail (``embed`` with a computed id, host ``/ // % **``, calls
that may contain them: :func:`acrobat.passes.dce.may_fail`) never swap, so an instance
raises the same error first; ``phase()`` (and ghost padding) stay where they are, with
everything before them. A binding that rebinds a name a waiting one reads waits too.

Runs before fusion, so the moved ops join the kernels before the read. Switched by
``CompileOptions.independence``. Same results and the same errors; fewer rounds of
reads and fewer launches where a block has work that does not need the value it reads.
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.independence import is_barrier
from acrobat.analysis.taint import taint
from acrobat.ir.nodes import Binding, Expr, Function, Let, Module, OpCall, Phase
from acrobat.ir.traversal import var_names, walk
from acrobat.passes.base import NameSupply, PassContext, Property, map_host_functions
from acrobat.passes.dce import failing_functions, may_fail


def _wall(e: Expr) -> bool:
    return any(type(x) is Phase or (type(x) is OpCall and x.op == "ghost") for x in walk(e))


def reads_last(e: Let, fibers: frozenset[str], failing: frozenset[str]) -> tuple[Let, int]:
    """``e`` with its read-independent bindings moved above its reads; and how many moved."""
    out: list[Binding] = []
    pending: list[Binding] = []
    waits: set[str] = set()  # names bound by waiting bindings
    uses: set[str] = set()  # names read by waiting bindings
    pending_fails = False
    moved = 0
    for b in e.bindings:
        value = b.value
        names = var_names(value)
        if _wall(value):
            out += pending
            out.append(b)
            pending, waits, uses, pending_fails = [], set(), set(), False
            continue
        if is_barrier(value, fibers) or names & waits:
            pending.append(b)
            waits.add(b.var.name)
            uses |= names
            pending_fails = pending_fails or may_fail(value, failing)
            continue
        if pending and (
            (pending_fails and may_fail(value, failing))
            or b.var.name in uses
            or b.var.name in waits
        ):
            out += pending
            pending, waits, uses, pending_fails = [], set(), set(), False
        if pending:
            moved += 1
        out.append(b)
    out += pending
    if not moved:
        return e, 0
    return dataclasses.replace(e, bindings=tuple(out)), moved


class ReadsLast:
    """Move the work that does not need a read's value above the read."""

    name = "ReadsLast"
    requires = frozenset({Property.ANF})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.independence:
            return module
        fibers = taint(module).fiber_functions
        failing = failing_functions(module)
        total: dict[str, int] = {}

        def rule(f: Function, names: NameSupply, current: Module):
            def one(x: Expr) -> Expr:
                if not isinstance(x, Let):
                    return x
                y, n = reads_last(x, fibers, failing)
                if n:
                    total[f.name] = total.get(f.name, 0) + n
                return y

            return one

        out = dataclasses.replace(module, functions=map_host_functions(module, rule))
        for name, n in total.items():
            ctx.note(self.name, f"{name}: {n} binding(s) moved above a tensor read")
        return out
