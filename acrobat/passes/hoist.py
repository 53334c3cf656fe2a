"""HoistStaticDepth: give kernel calls that do not depend on recursion a static depth.

Runs :func:`acrobat.analysis.depth.static_depths` at kernel granularity and writes each
static site's run depth into its ``KernelCall.depth`` (printed ``hoist(d) @k(...)``). At
run time such a call is recorded at level ``d`` whatever the instance's dynamic depth,
so e.g. all leaf computations of all trees of a batch run in the first buckets
(docs/paper.md §5; the artifact's ``HoistNonSequentialOps``). Dynamic code starts
after the deepest hoisted level.

Writes ``ctx.facts.depth``. Same results (depths only schedule).
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.depth import is_kernel_step, static_depths
from acrobat.ir.nodes import Binding, Expr, KernelCall, Let, Module
from acrobat.ir.traversal import post_order_map
from acrobat.passes.base import PassContext, Property, map_functions


class HoistStaticDepth:
    """Annotate static kernel call sites with their depth."""

    name = "HoistStaticDepth"
    requires = frozenset({Property.KERNELS})
    provides = frozenset({Property.HOISTED})

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.hoisting:
            return module
        result = static_depths(module, is_kernel_step)
        static = result.static_sites
        ctx.facts.depth = result

        def one(f):
            hoisted: list[int] = []

            def block(e: Expr) -> Expr:
                if not isinstance(e, Let):
                    return e
                bs = []
                for b in e.bindings:
                    if isinstance(b.value, KernelCall):  # a stale depth is reset too
                        d = static.get((f.name, b.var.name))
                        if d is not None:
                            hoisted.append(d)
                        b = Binding(b.var, dataclasses.replace(b.value, depth=d))
                    bs.append(b)
                return dataclasses.replace(e, bindings=tuple(bs))

            if f.is_kernel:
                return f
            out = dataclasses.replace(f, body=post_order_map(f.body, block))
            if hoisted:
                span = (
                    f"{min(hoisted)}"
                    if min(hoisted) == max(hoisted)
                    else (f"{min(hoisted)}..{max(hoisted)}")
                )
                ctx.note(
                    self.name, f"{f.name}: {len(hoisted)} kernel call(s) at static depth {span}"
                )
            return out

        return map_functions(module, one)
