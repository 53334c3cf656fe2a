"""CoarsenGrains: one DFG node per straight-line run of kernels (docs/paper.md §3).

Pattern: consecutive kernel calls in a block, with only projections, tuples and host
arithmetic between them — e.g. the embedding and the gate kernel of a TreeLSTM leaf, or
an attention block's projections, scores and output. Steps: merge each maximal run into
ONE kernel whose body is the runs' bodies in order (inputs: what the run reads from
outside, outputs: what is used after it), so at run time it is one record, one schedule
entry and one dispatch per batch (the artifact's ``CoarsenPrimitiveFuncGranularity``).
A run ends at control flow, function calls, constructors, tensor-to-host reads and
``phase()``, and at a tuple or host value built from its results (a kernel makes only
tensors); bindings that read nothing the run computes (host arithmetic) are placed before
the merged call. Hoisted (static-depth) and dynamic calls are never mixed, and two hoisted
calls merge only at the same static depth or when the later one reads the earlier one.
The merged node is given its first member's depth, which can be too early (a later
member may read a value from outside the run that is ready only at its own depth), so
this pass invalidates ``hoisted`` and the pipeline runs HoistStaticDepth again after it.
The merged kernel keeps the fusion groups of its members (``ctx.facts.coarse_groups``,
then ``groups`` in the kernel spec) so GPU code generation can still launch one fused
kernel per group.

Same results.
"""

from __future__ import annotations

import dataclasses

from acrobat.ir.nodes import (
    KERNEL,
    Binding,
    Expr,
    Function,
    KernelCall,
    Let,
    Module,
    OpCall,
    Proj,
    TupleExpr,
    Var,
)
from acrobat.ir.ops import REGISTRY, OpKind
from acrobat.ir.traversal import kernel_key, post_order_map, var_names, walk
from acrobat.ir.types import TensorType, TupleType
from acrobat.passes.base import (
    NameSupply,
    PassContext,
    Property,
    fresh_global,
    last_uses,
    map_host_functions,
)
from acrobat.passes.fuse import flatten_output


def _passive(v: Expr) -> bool:
    """Bindings a run may step over (no effect on the DFG or on depth)."""
    return isinstance(v, (Var, Proj, TupleExpr)) or (
        isinstance(v, OpCall) and REGISTRY[v.op].kind is OpKind.HOST
    )


class CoarsenGrains:
    """Merge runs of kernel calls into single kernels."""

    name = "CoarsenGrains"
    requires = frozenset({Property.ANF, Property.KERNELS})
    invalidates = frozenset({Property.HOISTED})  # a merged call has its first member's depth

    def apply(self, module: Module, ctx: PassContext) -> Module:
        if not ctx.options.coarsening:
            return module
        self.m = module
        self.new: dict[tuple, Function] = {}
        self.taken = set(module.function_map)
        self.groups: dict[str, list[str]] = ctx.facts.coarse_groups
        self.merged = 0
        fns = map_host_functions(module, lambda f, names, _: lambda e: self.block(e, f, names))
        used = {x.kernel for f in fns for x in walk(f.body) if isinstance(x, KernelCall)}
        kernels = [f for f in fns if not f.is_kernel or f.name in used]
        kernels += [k for k in self.new.values()]
        ctx.note(self.name, f"{self.merged} run(s) of kernel calls merged into one node each")
        return dataclasses.replace(module, functions=tuple(kernels))

    def block(self, e: Expr, f: Function, names: NameSupply) -> Expr:
        if not isinstance(e, Let):
            return e
        bs = list(e.bindings)
        last_use = last_uses(e)
        out: list[Binding] = []
        run: list[Binding] = []  # kernel calls and the passive bindings between them
        inside: set[str] = set()  # what the merged kernel would compute (see ``merge``)

        def flush(i: int) -> None:
            nonlocal run, inside
            calls = [b for b in run if isinstance(b.value, KernelCall)]
            if len(calls) < 2:
                out.extend(run)
            else:
                used = {b.var.name for b in run if last_use.get(b.var.name, -1) >= i}
                out.extend(self.merge(run, used, f, names))
            run, inside = [], set()

        for i, b in enumerate(bs):
            v = b.value
            if isinstance(v, KernelCall):
                if run and not self.compatible(run, v):
                    flush(i)
                run.append(b)
                inside.add(b.var.name)
            elif run and _passive(v) and not var_names(v) & inside:
                run.append(b)  # reads nothing the run computes: placed before the merged call
            elif run and isinstance(v, (Var, Proj)) and isinstance(b.var.ty, TensorType):
                run.append(b)  # a projection or alias of a result: inside the merged kernel
                inside.add(b.var.name)
            else:  # e.g. a tuple holding a result: a kernel only makes tensors, so it ends the run
                flush(i)
                out.append(b)
        flush(len(bs))
        return dataclasses.replace(e, bindings=tuple(out))

    def compatible(self, run: list[Binding], v: KernelCall) -> bool:
        first = next(b.value for b in run if isinstance(b.value, KernelCall))
        if (first.depth is None) != (v.depth is None):
            return False
        if v.depth is None or v.depth == first.depth:
            return True
        defined = {b.var.name for b in run}
        return bool(var_names(v) & defined)

    def merge(self, run: list[Binding], used_after: set[str], f: Function, names: NameSupply):
        """One kernel for a run; bindings reading nothing of the run stay before the call."""
        inner: list[Binding] = []
        outside: list[Binding] = []
        groups: list[list[str]] = []
        defined: set[str] = set()
        inputs: list[Var] = []
        seen: set[str] = set()
        for b in run:
            v = b.value
            if isinstance(v, KernelCall):
                k = self.m.function_map[v.kernel]
                inlined, out_expr = _inline_kernel(k, v.args, names)
                inner.extend(inlined)
                inner.append(Binding(b.var, out_expr))
                groups.append(self.groups.get(v.kernel, [v.kernel]))
            elif not var_names(v) & defined:  # e.g. host arithmetic: computed before the call
                outside.append(b)
                continue
            else:
                inner.append(b)
            for x in walk(v):
                if isinstance(x, Var) and x.name not in defined and x.name not in seen:
                    seen.add(x.name)
                    inputs.append(x)
            defined.add(b.var.name)
        outs = [b.var for b in run if b.var.name in used_after and b.var.name in defined]
        if not outs:
            outs = [inner[-1].var]
        rebuild: list[Binding] = []
        if len(outs) > 1 and any(isinstance(o.ty, TupleType) for o in outs):
            # outputs are flat: a tuple value (a kernel ending in ``split``) next to other
            # outputs leaves as its elements and is rebuilt after the call
            parts: list[Binding] = []
            outs = [p for o in outs for p in flatten_output(o, parts, rebuild, names)]
            inner.extend(parts)
            rebuild.reverse()
        result = (
            outs[0]
            if len(outs) == 1
            else TupleExpr(tuple(outs), ty=TupleType(tuple(o.ty for o in outs)))
        )
        params = tuple(Var(x.name, ty=x.ty) for x in inputs)
        body = Let(tuple(inner), result, ty=result.ty)
        depth = next(b.value.depth for b in run if isinstance(b.value, KernelCall))
        key = kernel_key(Function("", params, result.ty, body, KERNEL))
        if key not in self.new:
            name = fresh_global(f"{f.name}_node", self.taken)
            self.new[key] = Function(name, params, result.ty, body, KERNEL)
            self.groups[name] = [g for gs in groups for g in gs]
        kernel = self.new[key]
        self.merged += 1
        call = KernelCall(kernel.name, tuple(inputs), depth, ty=kernel.ret)
        if len(outs) == 1:
            return outside + [Binding(outs[0], call)]
        tmp = Var(names.fresh("n"), ty=kernel.ret)
        return (
            outside
            + [Binding(tmp, call)]
            + [Binding(o, Proj(tmp, j, ty=o.ty)) for j, o in enumerate(outs)]
            + rebuild
        )


def _inline_kernel(k: Function, args, names: NameSupply) -> tuple[list[Binding], Expr]:
    """A kernel body with its parameters replaced by ``args`` and fresh inner names."""
    mapping: dict[str, Expr] = {p.name: a for p, a in zip(k.params, args)}
    body = k.body
    bindings = body.bindings if isinstance(body, Let) else ()
    for b in bindings:
        mapping[b.var.name] = Var(names.fresh(b.var.name), ty=b.var.ty)

    def ren(e: Expr) -> Expr:
        return mapping.get(e.name, e) if isinstance(e, Var) else e

    out = [Binding(mapping[b.var.name], post_order_map(b.value, ren)) for b in bindings]
    result = post_order_map(body.body if isinstance(body, Let) else body, ren)
    return out, result
