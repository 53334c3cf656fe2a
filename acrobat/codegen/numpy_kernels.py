"""Batched NumPy source for a kernel: the CPU twin of the CUDA code generator.

A kernel's IR body is per instance; the generated function takes ``B`` and its batched
arguments (``[B, *shape]`` tensors, ``[B]`` int arrays for host ints) and computes every
op for the whole batch at once. Weights are not arguments: they are bound once into the
function's namespace (``dense`` weights pre-transposed, so each batch is one GEMM with
the weight shared, never stacked). Rules per op are a table keyed by op name, like
JAX's batching rules; each rule knows which operands carry the batch dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from acrobat.codegen import ident
from acrobat.errors import IndexOutOfRange
from acrobat.ir.nodes import Const, Function, Let, OpCall, ParamRef, Proj, TupleExpr, Var
from acrobat.ir.types import FLOAT, TensorType, TupleType


@dataclass(frozen=True)
class NumpyKernel:
    """A compiled batched kernel: ``fn(B, *args) -> tuple of [B, ...] arrays``."""

    name: str
    source: str
    fn: object


def _sigmoid(x, out=None):
    t = np.negative(x, out=out)
    if not isinstance(t, np.ndarray):  # a NumPy scalar (an unbatched 0-d value)
        return np.float32(1.0) / (np.float32(1.0) + np.exp(t))
    np.exp(t, out=t)
    t += 1.0
    return np.reciprocal(t, out=t)


_GELU_C = np.float32(np.sqrt(2.0 / np.pi))


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x * x * x)))


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def _layer_norm(x, g, b, eps):
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    return xc / np.sqrt(var + eps) * g + b


def workspace(shapes: list[tuple[tuple[int, ...], str]]):
    """``buf(i, B)``: a ``[B, *shape_i]`` view of a buffer kept across calls.

    Kernel temporaries are written into these instead of fresh arrays: large fresh
    arrays cost a page fault per page on first touch, which doubled kernel time."""
    store: list[np.ndarray | None] = [None] * len(shapes)

    def buf(i: int, B: int) -> np.ndarray:
        a = store[i]
        if a is None or a.shape[0] < B:
            cap = max(B, 2 * a.shape[0]) if a is not None else B
            shape, dtype = shapes[i]
            a = store[i] = np.empty((cap,) + shape, dtype)
        return a[:B]

    return buf


def _ids(idx: np.ndarray, size: int) -> np.ndarray:
    """Check embedding ids (NumPy would wrap negative ids silently)."""
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        flat = idx.reshape(-1)
        pos = int(np.flatnonzero((flat < 0) | (flat >= size))[0])
        raise IndexOutOfRange(pos, int(flat[pos]), size)
    return idx


HELPERS = {
    "np": np,
    "_ids": _ids,
    "_sigmoid": _sigmoid,
    "_gelu": _gelu,
    "_softmax": _softmax,
    "_layer_norm": _layer_norm,
}

# {0}, {1}: operands; {out}: ", out=<buffer>" when the result may overwrite an operand
_UNARY = {
    "sigmoid": "_sigmoid({0}{out})",
    "tanh": "np.tanh({0}{out})",
    "relu": "np.maximum({0}, 0{out})",
    "gelu": "_gelu({0})",
    "exp": "np.exp({0}{out})",
    "log": "np.log({0}{out})",
    "sqrt": "np.sqrt({0}{out})",
    "neg": "np.negative({0}{out})",
}
_BINARY = {
    "add": "np.add({0}, {1}{out})",
    "sub": "np.subtract({0}, {1}{out})",
    "mul": "np.multiply({0}, {1}{out})",
    "div": "np.divide({0}, {1}{out})",
    "maximum": "np.maximum({0}, {1}{out})",
    "minimum": "np.minimum({0}, {1}{out})",
}
# ops whose result is a fresh array the kernel owns (so a later op may overwrite it)
_FRESH = (
    set(_UNARY)
    | set(_BINARY)
    | {
        "dense",
        "matmul",
        "batch_matmul",
        "embed",
        "concat",
        "softmax",
        "layer_norm",
        "sum",
        "mean",
        "max",
        "zeros",
        "ones",
    }
)


class _KernelGen:
    def __init__(self, f: Function, weights: dict[str, np.ndarray]):
        self.f = f
        self.ns = dict(HELPERS)
        self.weights = weights
        self.lines: list[str] = []
        self.batched: dict[str, bool] = {}
        self.rank: dict[str, int] = {}
        self.names: dict[str, str] = {}
        self.slots: list[tuple[tuple[int, ...], str]] = []
        self.host_float: set[str] = set()

    def name(self, var: str) -> str:
        return self.names.get(var, ident("x_", var))

    def weight(self, w: str, transposed: bool = False) -> str:
        key = ident("W_", w) + ("_T" if transposed else "")
        if key not in self.ns:
            a = self.weights[w]
            self.ns[key] = np.ascontiguousarray(a.T) if transposed else a
        return key

    def operand(self, e) -> tuple[str, bool, int]:
        """(code, batched?, per-instance rank)."""
        if isinstance(e, Var):
            return self.name(e.name), self.batched[e.name], self.rank[e.name]
        if isinstance(e, ParamRef):
            return self.weight(e.name), False, len(self.weights[e.name].shape)
        if isinstance(e, Const):
            return f"np.float32({float(e.value)!r})", False, 0
        raise NotImplementedError(type(e).__name__)

    def count_uses(self) -> None:
        """Uses of each variable in the body (outputs count as uses: never overwritten)."""
        from acrobat.ir.traversal import walk

        self.uses: dict[str, int] = {}
        for x in walk(self.f.body):
            if isinstance(x, Var):
                self.uses[x.name] = self.uses.get(x.name, 0) + 1
        self.owned: set[str] = set()

    def slot(self, ty: TensorType) -> str:
        """``, out=<workspace view>`` for a batched result of type ``ty``."""
        self.slots.append((tuple(ty.shape), ty.dtype))
        return f", out=_buf({len(self.slots) - 1}, B)"

    def reusable(self, e, out_ty) -> str | None:
        """The buffer of operand ``e`` if the op's result may be written over it."""
        if not isinstance(e, Var) or e.name not in self.owned or self.uses.get(e.name) != 1:
            return None
        if not self.batched[e.name] or e.ty != out_ty:
            return None
        return self.name(e.name)

    def generate(self) -> str:
        self.count_uses()
        f = self.f
        args = []
        for p in f.params:
            args.append(self.name(p.name))
            self.batched[p.name] = True
            if p.ty == FLOAT:  # recorded as the bits of a float64 (see codegen.host)
                self.host_float.add(p.name)
            self.rank[p.name] = len(p.ty.shape) if isinstance(p.ty, TensorType) else 0
        self.lines.append(f"def {ident('kernel_', f.name)}(B, {', '.join(args)}):")
        body = f.body
        for b in body.bindings if isinstance(body, Let) else ():
            self.bind(b.var, b.value)
        outs = body.body if isinstance(body, Let) else body
        types = f.ret.fields if isinstance(f.ret, TupleType) else (f.ret,)
        if isinstance(outs, TupleExpr):
            items = [self.operand(o) for o in outs.fields]
        elif isinstance(f.ret, TupleType):  # a tuple-valued variable (e.g. a split)
            parts = getattr(self, "tuple_parts", {}).get(outs.name)
            whole = self.name(outs.name)
            items = parts or [(f"{whole}[{j}]", self.batched[outs.name]) for j in range(len(types))]
        else:
            items = [self.operand(outs)]
        results = []
        for (code, batched, *_), ty in zip(items, types):
            if not batched:
                code = f"np.broadcast_to({code}, (B,) + {tuple(ty.shape)!r})"
            results.append(code)
        self.lines.append(f"    return ({', '.join(results)},)")
        return "\n".join(self.lines) + "\n"

    def bind(self, var: Var, e) -> None:
        target = self.name(var.name)
        if isinstance(e, Var):
            self.names[var.name] = self.name(e.name)
            if e.name in self.host_float:
                self.host_float.add(var.name)
            self.batched[var.name] = self.batched[e.name]
            self.rank[var.name] = self.rank[e.name]
            return
        if isinstance(e, ParamRef | Const):
            code, b, r = self.operand(e)
            self.names[var.name] = code
            self.batched[var.name], self.rank[var.name] = b, r
            return
        if isinstance(e, TupleExpr):
            parts = [self.operand(x) for x in e.fields]
            self.lines.append(f"    {target} = ({''.join(p[0] + ', ' for p in parts)})")
            self.batched[var.name] = any(p[1] for p in parts)
            self.rank[var.name] = 0
            self.tuple_parts = getattr(self, "tuple_parts", {})
            self.tuple_parts[var.name] = parts
            return
        if isinstance(e, Proj):
            parts = getattr(self, "tuple_parts", {}).get(e.tup.name)
            if parts is not None:
                self.names[var.name], self.batched[var.name], self.rank[var.name] = parts[e.index]
                return
            self.lines.append(f"    {target} = {self.name(e.tup.name)}[{e.index}]")
            self.batched[var.name] = self.batched[e.tup.name]
            self.rank[var.name] = len(var.ty.shape)
            return
        if e.op == "dense":
            code, batched = self.dense(e, target)
        else:
            code, batched = self.op(e)
            self.lines.append(f"    {target} = {code}")
        if e.op in _FRESH and batched:
            self.owned.add(var.name)
        self.batched[var.name] = batched
        self.rank[var.name] = len(e.ty.shape) if isinstance(e.ty, TensorType) else 0

    def op(self, e: OpCall) -> tuple[str, bool]:
        ops = [self.operand(a) for a in e.args]
        attrs = dict(e.attrs)
        anyb = any(o[1] for o in ops)
        shift = 1 if anyb else 0
        name = e.op
        if name in _UNARY:
            buf = self.reusable(e.args[0], e.ty)
            out = f", out={buf}" if buf else self.slot(e.ty) if ops[0][1] else ""
            if name == "gelu":
                out = ""
            return _UNARY[name].format(ops[0][0], out=out), ops[0][1]
        if name in _BINARY:
            (a, ab, ar), (b, bb, br) = ops
            # a batched operand of lower rank gets its batch axis kept apart ([B, D] ->
            # [B, 1, D]); an unbatched one broadcasts against the trailing axes as it is
            out_rank = len(e.ty.shape)
            a = self.batched_like(ops[0], out_rank)
            b = self.batched_like(ops[1], out_rank)
            buf = self.reusable(e.args[0], e.ty) or self.reusable(e.args[1], e.ty)
            out = f", out={buf}" if buf else self.slot(e.ty) if anyb else ""
            return _BINARY[name].format(a, b, out=out), anyb
        if name == "matmul":
            return self.matmul(ops), anyb
        if name == "batch_matmul":
            (a, _, _), (b, _, _) = ops
            if attrs.get("transpose_b"):
                b = f"np.swapaxes({b}, -1, -2)"
            return f"np.matmul({a}, {b})", anyb
        if name == "embed":
            table, tb, _ = ops[0]
            idx, ib, _ = ops[1]
            if isinstance(e.args[1], Const):  # a constant id (the same row for everyone)
                idx = f"np.asarray({int(e.args[1].value)!r})"
            if tb:  # a table that arrived as a per-instance value: row ids[b] of table b
                ids = f"_ids({idx}, {table}.shape[1])"
                return f"{table}[np.arange(B), {ids}]", True
            ids = f"_ids({idx}, {table}.shape[0])"
            return f"np.take({table}, {ids}, axis=0{self.slot(e.ty) if ib else ''})", ib
        if name == "concat":
            axis = attrs.get("axis", 0)
            rank = ops[0][2]
            ax = (axis % rank) + shift
            parts = [
                o[0] if o[1] or not anyb else f"np.broadcast_to({o[0]}, (B,) + {o[0]}.shape)"
                for o in ops
            ]
            out = self.slot(e.ty) if anyb else ""
            return f"np.concatenate(({', '.join(parts)},), axis={ax}{out})", anyb
        if name == "split":
            x, xb, r = ops[0]
            ax = attrs.get("axis", 0) % r + (1 if xb else 0)
            return f"np.split({x}, {attrs['sections']}, axis={ax})", xb
        if name == "slice":
            x, xb, r = ops[0]
            ax = attrs.get("axis", 0) % r + (1 if xb else 0)
            idx = "".join(":, " for _ in range(ax)) + f"{attrs['start']}:{attrs['stop']}"
            return f"{x}[{idx}]", xb
        if name == "reshape":
            x, xb, _ = ops[0]
            shape = tuple(e.ty.shape)
            return (f"{x}.reshape((B,) + {shape!r})" if xb else f"{x}.reshape({shape!r})"), xb
        if name == "transpose":
            x, xb, r = ops[0]
            axes = attrs.get("axes") or tuple(reversed(range(r)))
            if xb:
                axes = (0,) + tuple(a + 1 for a in axes)
            return f"np.transpose({x}, {tuple(axes)!r})", xb
        if name == "softmax":
            x, xb, r = ops[0]
            ax = attrs.get("axis", -1) % r + (1 if xb else 0)
            return f"_softmax({x}, {ax})", xb
        if name == "layer_norm":
            rank = len(e.ty.shape)
            g, b = (self.batched_like(o, rank) for o in ops[1:])
            return f"_layer_norm({ops[0][0]}, {g}, {b}, {attrs.get('eps', 1e-5)!r})", anyb
        if name in ("sum", "mean", "max"):
            x, xb, r = ops[0]
            axis = attrs.get("axis")
            if axis is None:
                ax = tuple(range(1 if xb else 0, r + (1 if xb else 0)))
            else:
                ax = axis % r + (1 if xb else 0)
            keep = bool(attrs.get("keepdims"))
            return f"np.{name}({x}, axis={ax!r}, keepdims={keep})", xb
        if name == "scalar":
            x, xb, _ = ops[0]
            if not xb:
                return f"np.float32({x})", False
            a = e.args[0]
            if isinstance(a, Var) and a.name in self.host_float:
                x = f"{x}.view(np.float64)"
            return f"np.asarray({x}, dtype=np.float32)", True
        if name in ("zeros", "ones"):
            shape = tuple(e.ty.shape)
            return f"np.{name}((B,) + {shape!r}, dtype=np.float32)", True
        raise NotImplementedError(f"no batched NumPy rule for {name}")

    def dense(self, e: OpCall, target: str) -> tuple[str, bool]:
        """Emit ``target = x @ W.T (+ b)``; the bias is added in place when the product
        already has the result's batched shape."""
        ops = [self.operand(a) for a in e.args]
        (x, xb, xr), (w, wb, _) = ops[:2]
        if wb:  # a weight that arrived as a batched value ([B, out, in])
            if xr == 1:
                code = f"np.matmul({w}, {x}[..., None])[..., 0]"
            else:  # x [B or 1, *lead, in] @ W^T [B, 1 (per lead axis but the last), in, out]
                xs = x if xb else f"{x}[None]"
                wt = f"np.swapaxes({w}, -1, -2)"
                if xr > 2:
                    wt = f"np.expand_dims({wt}, {tuple(range(1, xr - 1))!r})"
                code = f"np.matmul({xs}, {wt})"
        else:
            wt = (
                self.weight(e.args[1].name, transposed=True)
                if isinstance(e.args[1], ParamRef)
                else f"{w}.T"
            )
            code = f"np.matmul({x}, {wt}{self.slot(e.ty) if xb else ''})"
        batched = xb or wb or (len(ops) > 2 and ops[2][1])
        if len(ops) == 2:
            self.lines.append(f"    {target} = {code}")
            return code, batched
        bias = self.batched_like(ops[2], len(e.ty.shape))
        if xb or wb:
            self.lines.append(f"    {target} = {code}")
            self.lines.append(f"    {target} += {bias}")
        else:
            self.lines.append(f"    {target} = np.add({code}, {bias})")
        return target, batched

    def batched_like(self, operand: tuple[str, bool, int], out_rank: int) -> str:
        """A batched operand of lower per-instance rank, shaped to broadcast against a
        batched result (``[B, D]`` -> ``[B, 1, D]``); unbatched operands broadcast as is."""
        code, batched, rank = operand
        return self.expand(code, rank, out_rank) if batched else code

    @staticmethod
    def expand(code: str, rank: int, out_rank: int) -> str:
        if rank >= out_rank:
            return code
        pad = "(1,) * " + str(out_rank - rank)
        return f"{code}.reshape({code}.shape[:1] + {pad} + {code}.shape[1:])"

    def matmul(self, ops) -> str:
        (a, ab, ar), (b, bb, br) = ops
        if ab and bb:
            if ar == 2 and br == 2:
                return f"np.matmul({a}, {b})"
            if ar == 2 and br == 1:
                return f"np.matmul({a}, {b}[..., None])[..., 0]"
            if ar == 1 and br == 2:
                return f"np.matmul({a}[:, None, :], {b})[:, 0, :]"
            return f"np.einsum('bk,bk->b', {a}, {b})"
        if not ab and bb and br == 1:
            return f"np.matmul({b}, np.transpose({a}))" if ar == 2 else f"np.matmul({b}, {a})"
        return f"np.matmul({a}, {b})"


def compile_numpy_kernel(f: Function, weights: dict[str, np.ndarray]) -> NumpyKernel:
    """Generate and compile the batched NumPy function of one kernel."""
    gen = _KernelGen(f, weights)
    source = gen.generate()
    ns = gen.ns
    ns["_buf"] = workspace(gen.slots)
    exec(compile(source, f"<kernel {f.name}>", "exec"), ns)  # our own generated code
    return NumpyKernel(f.name, source, ns[ident("kernel_", f.name)])
