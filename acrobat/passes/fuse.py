"""FuseOps: group tensor ops into kernels (docs/paper.md §2, vertical fusion).

Pattern: in each straight-line block, runs of tensor ops connected by dataflow, e.g.
``dense -> split -> sigmoid/tanh -> mul -> add``. Rules, by op kind: an *opaque* op
(dense, matmul, embed, batch_matmul) always starts a new group (it is the group's
anchor); an elementwise, broadcast, injective, reduction or creation op joins the open
group if it uses a value of that group, else starts one; projections of a tuple made in
the group stay in it. A group is closed by anything that is not a tensor op and uses one
of its values, and by calls, control flow, constructors, tensor-to-host reads and
``phase()``. Ops that hoisting can give a static depth never share a group with ops
that cannot (otherwise hoisting would be lost), using :mod:`acrobat.analysis.depth`.

Each group becomes a kernel function (``kernel @<fn>_k<n>``) whose parameters are the
batched values it reads (tensors, and host ints such as embedding ids) — weights appear
inside it as ``$W`` — and whose result is the tuple of values used after the group. The
call site is ``let %g = @<fn>_k<n>(...)`` plus projections binding the original names,
so the rest of the block is unchanged. Structurally identical kernels (same ops, same
weights: e.g. from inlining one helper in two places) are shared, so they batch together.

Correctness: a group is contiguous in the block and closed before any use of its values
outside it, so moving its ops into one call placed at the group's end keeps every
operand defined before use. With ``options.fusion`` off every op is its own kernel.

Same results.
"""

from __future__ import annotations

import dataclasses

from acrobat.analysis.depth import is_tensor_step, static_depths
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
from acrobat.ir.traversal import kernel_key, var_names, walk
from acrobat.ir.types import TupleType
from acrobat.passes.base import (
    NameSupply,
    PassContext,
    Property,
    fresh_global,
    last_uses,
    map_host_functions,
)

FUSABLE = tuple(k for k in OpKind if k.in_kernel)  # the kinds that run in kernels


def kernel_op(v: Expr) -> bool:
    return isinstance(v, OpCall) and REGISTRY[v.op].kind in FUSABLE


@dataclasses.dataclass
class _Group:
    members: list[Binding]
    static: bool
    defined: set[str]


class FuseOps:
    """Turn tensor ops into kernel functions and kernel calls."""

    name = "FuseOps"
    requires = frozenset({Property.ANF})
    provides = frozenset({Property.KERNELS})
    invalidates = frozenset({Property.HOISTED})  # its new kernel calls have no depth yet

    def apply(self, module: Module, ctx: PassContext) -> Module:
        depth = static_depths(module, is_tensor_step) if ctx.options.hoisting else None
        self.kernels: dict[tuple, Function] = {}
        self.taken = set(module.function_map)
        self.sites = 0
        fns = map_host_functions(module, lambda f, names, _: self.rule(f, names, depth, ctx))
        ctx.note(
            self.name,
            f"{self.sites} op group(s) -> {len(self.kernels)} distinct kernel(s)",
        )
        return dataclasses.replace(module, functions=fns + tuple(self.kernels.values()))

    def rule(self, f: Function, names: NameSupply, depth, ctx: PassContext):
        """The block rewrite for host function ``f``."""
        static = set()
        if depth is not None:
            static = {v for (fn, v), d in depth.static_sites.items() if fn == f.name}

        def block(e: Expr) -> Expr:
            if not isinstance(e, Let):
                return e
            return self.fuse_block(e, f.name, names, static, ctx.options.fusion)

        return block

    def fuse_block(self, e: Let, fn: str, names: NameSupply, static: set[str], fusion: bool):
        bs = list(e.bindings)
        last_use = last_uses(e)
        out: list[Binding] = []
        group: _Group | None = None

        def close(i: int) -> None:
            nonlocal group
            if group is not None:
                used = {b.var.name for b in group.members if last_use.get(b.var.name, -1) >= i}
                out.extend(self.emit(group, used, fn, names))
                group = None

        for i, b in enumerate(bs):
            v = b.value
            if kernel_op(v):
                is_static = b.var.name in static
                opaque = REGISTRY[v.op].kind is OpKind.OPAQUE
                joins = (
                    fusion
                    and group is not None
                    and group.static == is_static
                    and not opaque
                    and bool(var_names(v) & group.defined)
                )
                if not joins:
                    close(i)
                    group = _Group([], is_static, set())
                group.members.append(b)
                group.defined.add(b.var.name)
            elif (
                group is not None
                and isinstance(v, Proj)
                and isinstance(v.tup, Var)
                and (v.tup.name in group.defined)
            ):
                group.members.append(b)
                group.defined.add(b.var.name)
            else:
                if group is not None and (var_names(v) & group.defined or _closes(v)):
                    close(i)
                out.append(b)
        close(len(bs))
        return dataclasses.replace(e, bindings=tuple(out))

    def emit(self, g: _Group, used_after: set[str], fn: str, names: NameSupply) -> list[Binding]:
        """The kernel call for one group, and projections binding its outputs."""
        self.sites += 1
        inputs: list[Var] = []
        seen = set()
        for b in g.members:
            for x in walk(b.value):
                if isinstance(x, Var) and x.name not in g.defined and x.name not in seen:
                    seen.add(x.name)
                    inputs.append(x)
        outs = [b.var for b in g.members if b.var.name in used_after]
        if not outs:
            outs = [g.members[-1].var]
        rebuild: list[Binding] = []
        if len(outs) > 1 and any(isinstance(o.ty, TupleType) for o in outs):
            # a kernel's outputs are flat: a tuple value (``split``) next to other outputs
            # leaves as its elements and is rebuilt after the call
            inner: list[Binding] = []
            outs = [p for o in outs for p in flatten_output(o, inner, rebuild, names)]
            g = _Group(g.members + inner, g.static, g.defined | {b.var.name for b in inner})
            rebuild.reverse()  # inner tuples first
        kernel = self.kernel_for(g, inputs, outs, fn)
        ret = kernel.ret
        call = KernelCall(kernel.name, tuple(inputs), ty=ret)
        if len(outs) == 1:
            return [Binding(outs[0], call)]
        tmp = Var(names.fresh("k"), ty=ret)
        bind = [Binding(tmp, call)]
        bind += [Binding(o, Proj(tmp, j, ty=o.ty)) for j, o in enumerate(outs)]
        return bind + rebuild

    def kernel_for(self, g: _Group, inputs: list[Var], outs: list[Var], fn: str) -> Function:
        params = tuple(Var(x.name, ty=x.ty) for x in inputs)
        result = (
            outs[0]
            if len(outs) == 1
            else TupleExpr(tuple(outs), ty=TupleType(tuple(o.ty for o in outs)))
        )
        body = Let(tuple(g.members), result, ty=result.ty)
        fnk = Function("", params, result.ty, body, KERNEL)
        key = kernel_key(fnk)
        if key not in self.kernels:
            name = fresh_global(f"{fn}_k", self.taken)
            self.kernels[key] = dataclasses.replace(fnk, name=name)
        return self.kernels[key]


def flatten_output(
    o: Var, inner: list[Binding], rebuild: list[Binding], names: NameSupply
) -> list[Var]:
    """The non-tuple values that make up ``o``: projections of a tuple go into the kernel
    (``inner``) and the tuple is rebuilt from them after the call (``rebuild``)."""
    if not isinstance(o.ty, TupleType):
        return [o]
    parts = []
    for j, t in enumerate(o.ty.fields):
        p = Var(names.fresh(o.name), ty=t)
        inner.append(Binding(p, Proj(o, j, ty=t)))
        parts.append(p)
    rebuild.append(Binding(o, TupleExpr(tuple(parts), ty=o.ty)))
    return [x for p in parts for x in flatten_output(p, inner, rebuild, names)]


def _closes(v: Expr) -> bool:
    """Bindings that end the open group even when they do not use it."""
    return not isinstance(v, (Var, Proj, TupleExpr)) and not (
        isinstance(v, OpCall) and REGISTRY[v.op].kind is OpKind.HOST
    )
