"""InferIndependence: find the steps no data dependency orders (docs/paper.md §4).

Pattern: a block whose steps (dynamic kernel calls, calls, ``map``, ``parallel``) do not
all depend on the ones before them, e.g. the child-sum TreeLSTM's ``sum_h(kids)`` and
``map(forget, kids, ...)``, written one after the other. The language is pure, so only
data orders them: with ``CompileOptions.independence`` on, the host program starts each
step at the max depth its operands are ready at (``codegen/host.py``), which gives such
steps the depth semantics of ``parallel(...)``: the same start depth, and the block goes
on from the max. Tensor-to-host reads, calls that may read (fiber functions), ``phase()``
and ghost padding stay barriers in program order
(:mod:`acrobat.analysis.independence`). The ghost padding that follows counts a block's
cost the same way (:mod:`acrobat.analysis.branch_costs`).

The IR is unchanged: the pass records what it found in ``ctx.facts.independent`` and
notes it for ``acrobat.explain``. Same results (depths only schedule).
"""

from __future__ import annotations

from acrobat.analysis.independence import independent_steps
from acrobat.analysis.taint import taint
from acrobat.ir.nodes import Let, Module
from acrobat.ir.traversal import walk
from acrobat.passes.base import PassContext, Property


class InferIndependence:
    """Record the pairs of steps that start together (nothing is rewritten)."""

    name = "InferIndependence"
    requires = frozenset({Property.KERNELS, Property.HOISTED})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.independence:
            return module
        fibers = taint(module).fiber_functions
        found: dict[str, list[tuple[str, str]]] = {}
        for f in module.functions:
            if f.is_kernel:
                continue
            for e in walk(f.body):
                if isinstance(e, Let):
                    pairs = independent_steps(e, fibers)
                    if pairs:
                        found.setdefault(f.name, []).extend(pairs)
        ctx.facts.independent = found
        for name, pairs in found.items():
            shown = ", ".join(f"{a} || {b}" for a, b in pairs[:4])
            more = f" (+{len(pairs) - 4} more)" if len(pairs) > 4 else ""
            ctx.note(
                self.name,
                f"{name}: {len(pairs)} pair(s) of independent steps start together: {shown}{more}",
            )
        return module
