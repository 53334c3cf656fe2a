"""Batched NumPy source for a kernel: the CPU twin of the CUDA code generator.

A kernel's IR body is per instance; the generated function takes ``B`` and its batched
arguments (``[B, *shape]`` tensors, ``[B]`` int arrays for host ints) and computes every
op for the whole batch at once. Weights are not arguments: they are bound once into the
function's namespace (``dense`` weights pre-transposed, so each batch is one GEMM with
the weight shared, never stacked).

The function takes either calling convention of :mod:`acrobat.backends.base`. In the
fused one (not yet switched on by the NumPy backend: the executor would not count the
rows taken here in ``bytes_gathered``), each tensor argument arrives as ``(arena buffer, rows)`` and
is read in place when its rows are one block, else taken into a workspace buffer (one
copy, no fresh array); arguments of one tensor class concatenated along their first
axis are gathered by ONE take of their interleaved rows, which IS the concat
(:func:`_gather_cat`); and a result computed into a workspace slot is computed straight
into the arena rows of the kernel's output instead (no copy back).

Rules per op are a table keyed by op name (:data:`NUMPY_RULES`), like JAX's batching
rules; each rule knows which operands carry the batch dimension. An op that reaches a kernel without a rule is a
:class:`~acrobat.errors.MissingLoweringError` naming it, raised when the kernel is
compiled.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from acrobat.codegen import ident, missing_rule
from acrobat.errors import IndexOutOfRange
from acrobat.ir.nodes import Const, Function, Let, OpCall, ParamRef, Proj, TupleExpr, Var
from acrobat.ir.traversal import walk
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


_ONE = np.float32(1.0)


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
    if idx.size == 1:  # one id (the direct strategy, a batch of one): no reductions
        v = idx.item()
        if 0 <= v < size:
            return idx
        raise IndexOutOfRange(0, v, size)
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        flat = idx.reshape(-1)
        pos = int(np.flatnonzero((flat < 0) | (flat >= size))[0])
        raise IndexOutOfRange(pos, int(flat[pos]), size)
    return idx


def _row(table: np.ndarray, idx) -> np.ndarray:
    """Row ``idx`` of ``table`` for one instance (the per-instance kernels), checked as
    :func:`_ids` checks a batch."""
    v = int(idx)
    if 0 <= v < table.shape[0]:
        return table[v]
    raise IndexOutOfRange(0, v, table.shape[0])


def dense_by_value(xp, x, w, x_rank: int, x_batched: bool, w_batched: bool):
    """``dense`` whose weight is a value, not a resident weight: ``[out, in]``, or
    ``[B, out, in]`` per instance (as when taint specialization is off). ``x`` is
    ``[B, *lead, in]`` when batched, else ``[*lead, in]``; ``xp`` is NumPy or CuPy (the
    CUDA backend's plan runner uses the same rule)."""
    wt = xp.swapaxes(w, -1, -2)
    if not w_batched:
        return xp.matmul(x, wt)
    if x_rank == 1:
        return xp.matmul(w, x[..., None])[..., 0]
    if x_rank > 2:  # one weight per instance, shared along the input's leading axes
        wt = xp.expand_dims(wt, tuple(range(1, x_rank - 1)))
    return xp.matmul(x if x_batched else x[None], wt)


def block_start(rows: np.ndarray) -> int | None:
    """The first row when ``rows`` (host ints, at least one) are ``r0, r0 + 1, ...`` (one
    block: a view will do), else None. Shared by the NumPy kernels, the CuPy backend and
    the arenas: the one test of "these rows are one block"."""
    n = rows.shape[0]
    if n <= 256:  # small: Python list equality beats NumPy's per-call overhead
        lst = rows.tolist()
        r0 = lst[0]
        return r0 if lst[-1] - r0 == n - 1 and lst == list(range(r0, r0 + n)) else None
    r0 = int(rows[0])  # ends n - 1 apart and strictly increasing: consecutive
    return r0 if int(rows[-1]) - r0 == n - 1 and bool((rows[1:] > rows[:-1]).all()) else None


class NotGroupable(Exception):
    """Twin kernels whose group kernel this generator cannot write (see
    :func:`compile_numpy_group`)."""


def seg_rows(stacked, segs):
    """Each row's member's weight: ``stacked[member]`` repeated for its rows (``segs``:
    ``(member, rows)`` pairs in row order)."""
    if len(segs) == 1:
        m, n = segs[0]
        return np.broadcast_to(stacked[m], (n,) + stacked.shape[1:])
    return np.repeat(stacked[[m for m, _ in segs]], [n for _, n in segs], axis=0)


def _gather(arg, shape: tuple[int, ...], ws: np.ndarray) -> np.ndarray:
    """A batched argument as ``[B, *shape]``: an array passes through (the gathered
    convention); an ``(arena buffer, rows)`` pair is read in place when its rows are one
    block, else its rows are taken into the workspace ``ws`` (``[B, width]``)."""
    if not isinstance(arg, tuple):
        return arg
    buf, rows = arg
    n = rows.shape[0]
    r0 = block_start(rows)
    if r0 is not None:
        return buf[r0 : r0 + n].reshape((n,) + shape)
    np.take(buf, rows, axis=0, out=ws, mode="clip")  # rows are valid arena rows
    return ws.reshape((n,) + shape)


def _gather_cat(args: tuple, shape: tuple[int, ...], ws: np.ndarray) -> np.ndarray:
    """``concat`` along the first axis of batched arguments of one tensor class, into
    ``ws`` (``[B, *shape]``). Given ``(arena buffer, rows)`` pairs of one arena, it is ONE
    take of the interleaved rows (instance ``b``'s parts are adjacent rows of the
    result), so the arguments are gathered and concatenated in a single copy."""
    if all(isinstance(a, tuple) and a[0] is args[0][0] for a in args):
        rows = np.stack([a[1] for a in args], axis=1).reshape(-1)
        np.take(args[0][0], rows, axis=0, out=ws.reshape(rows.shape[0], -1), mode="clip")
        return ws
    parts = [a[0][a[1]] if isinstance(a, tuple) else a for a in args]
    n = ws.shape[0]
    return np.concatenate([x.reshape(n, -1) for x in parts], axis=1, out=ws.reshape(n, -1)).reshape(
        ws.shape
    )


def _gather_parts(parts: tuple, shape: tuple[int, ...], ws: np.ndarray) -> np.ndarray:
    """The rows of ``parts`` (kernel arguments: arrays or ``(arena buffer, rows)`` pairs)
    as one ``[B, *shape]`` array: :func:`_gather` of one, :func:`_gather_cat` of several."""
    if len(parts) == 1:
        return _gather(parts[0], shape, ws)
    return _gather_cat(parts, shape, ws)


def _numpy_dense_rows(x, wt, panels, out, bias=None):
    """``out = x @ wt (+ bias)`` by NumPy's ``matmul`` (``panels`` unused). Returns ``out``."""
    np.matmul(x, wt, out=out)
    if bias is not None:
        out += bias
    return out


def _numpy_dense_rows_by_member(x, wts, panels, segs, out, biases=None):
    """:func:`_numpy_dense_rows` for a twin group's batch: ``segs`` is ``(member, rows)``
    pairs in row order; each member's rows take its weight and bias. Returns ``out``."""
    s = 0
    for m, n in segs:
        if n:
            b = None if biases is None else biases[m]
            _numpy_dense_rows(x[s : s + n], wts[m], None, out[s : s + n], b)
            s += n
    return out


def _declines(*args) -> bool:
    return False


@dataclass(frozen=True)
class Products:
    """What generated kernels call for products and elementwise chains: an engine's
    (:mod:`acrobat.runtime.engines`), given to the kernel generator, which never looks for
    native code itself.

    ``dense_rows(x, wt, panels, out, bias)`` and ``dense_rows_by_member(x, wts, panels,
    segs, out, biases)`` compute products of rows with resident weights; ``product(x,
    panels, out, bias, segs) -> bool`` computes one whose rows ``x`` may be ``(arena
    buffer, rows)`` pairs read in place, or declines (False, nothing written); ``pack(wt)``
    makes the panels ``product`` reads (None: not taken); ``packable(shape, dtype)`` says
    whether it would; ``rowprog(B, ops, consts, arrays) -> bool`` runs an elementwise chain
    row by row, or declines (None: no such call)."""

    name: str
    dense_rows: Callable
    dense_rows_by_member: Callable
    product: Callable = _declines
    pack: Callable = lambda wt: None  # noqa: E731
    packable: Callable = _declines
    rowprog: Callable | None = None

    @property
    def reads_in_place(self) -> bool:
        """Whether its products and chains take rows where they lie in an arena."""
        return self.rowprog is not None

    def dense_from(self, parts, shape, ws, wt, panels, out, bias=None):
        """``dense`` of a kernel argument (or of a concat of several, ``parts``) with its
        gather fused into the product: ``product`` reads the argument's rows where they
        lie in their arena. When it declines, the rows are gathered into ``ws`` as the
        kernel's prologue would have (``shape``: the operand's per-instance shape) and
        ``dense_rows`` runs it. Returns ``out``."""
        if self.product(parts, panels, out, bias):
            return out
        return self.dense_rows(_gather_parts(parts, shape, ws), wt, panels, out, bias)

    def dense_from_by_member(self, parts, shape, ws, wts, panels, segs, out, biases=None):
        """:meth:`dense_from` for a twin group's batch (each member's rows by its weight,
        as ``dense_rows_by_member``)."""
        if self.product(parts, panels, out, biases, segs):
            return out
        x = _gather_parts(parts, shape, ws)
        return self.dense_rows_by_member(x, wts, panels, segs, out, biases)


NUMPY_PRODUCTS = Products("numpy", _numpy_dense_rows, _numpy_dense_rows_by_member)
"""Products by NumPy alone: the reference engine's, and a kernel's when none is given."""


HELPERS = {"np": np, "_ids": _ids, "_gather": _gather, "_gather_cat": _gather_cat}
"""Names every generated kernel can use; a rule adds its own (``NumpyRule.helpers``)."""

# Elementwise chains (consecutive elementwise ops of one row shape, e.g. an LSTM cell's
# gate math) run as ONE call of the native fused kernel (``acrobat/native/rowprog.c``):
# every op of a row in L1-resident vectors instead of one NumPy call per op streaming
# whole arrays. Its opcodes, and the NumPy expression of each op for the fallback the
# kernel keeps (the native call declines layouts it does not take).
ROWPROG_OPS = {
    "add": (1, "np.add({0}, {1})"),
    "sub": (2, "np.subtract({0}, {1})"),
    "mul": (3, "np.multiply({0}, {1})"),
    "div": (4, "np.divide({0}, {1})"),
    "neg": (5, "np.negative({0})"),
    "maximum": (6, "np.maximum({0}, {1})"),
    "minimum": (7, "np.minimum({0}, {1})"),
    "relu": (8, "np.maximum({0}, 0)"),
    "tanh": (9, "np.tanh({0})"),
    "sigmoid": (10, "_sigmoid({0})"),
    "exp": (11, "np.exp({0})"),
    "sqrt": (12, "np.sqrt({0})"),
}
ROWPROG_MAX_WIDTH = 16384
"""Rows wider than this (elements) keep their NumPy ops: the fused kernel holds a row of
every op's result at once, and on rows this wide NumPy's per-call cost is nothing."""

Operand = tuple[str, bool, int]  # (code, batched?, per-instance rank)


@dataclass(frozen=True)
class NumpyRule:
    """How one op becomes batched NumPy source.

    ``emit(gen, e, ops, target) -> (code, batched)``: ``ops`` are the operands as
    :data:`Operand`; the rule returns an expression the generator assigns to ``target``,
    or ``target`` itself once it has written its own statements (``gen.emit``).
    ``fresh``: a batched result is a new array the kernel owns, so a later op may write
    over it. ``helpers``: names the generated code calls, bound into the kernel's
    namespace once (so calling them costs what calling ``np.*`` costs)."""

    emit: Callable[[_KernelGen, OpCall, list[Operand], str], tuple[str, bool]]
    fresh: bool = True
    helpers: dict[str, Any] = field(default_factory=dict)


NUMPY_RULES: dict[str, NumpyRule] = {}
"""Op name -> its batched NumPy rule: one per op of a kind that runs in kernels."""

ELEMENTWISE_RULES: set[str] = set()
"""Ops whose rule is :func:`numpy_elementwise`: every operand reaches the template as an
operand, so in a twin group's kernel a weight that differs per member can be each row's
member's weight (repeated per row: only for weights of at most :data:`MAX_ROW_WEIGHT`
elements)."""

MAX_ROW_WEIGHT = 1 << 16
"""Elements of the largest weight an elementwise op of a twin group's kernel reads per
row (a bias); a larger one keeps the twins apart."""


def numpy_rule(*names: str, fresh: bool = True, helpers: dict[str, Any] | None = None):
    """Decorator registering ``emit`` as the NumPy rule of ``names``."""

    def deco(emit):
        for name in names:
            NUMPY_RULES[name] = NumpyRule(emit, fresh, dict(helpers or {}))
        return emit

    return deco


def numpy_elementwise(
    name: str,
    template: str,
    takes_out: bool = True,
    fresh: bool = True,
    helpers: dict[str, Any] | None = None,
) -> None:
    """The rule of an elementwise or broadcasting op from a source template: ``{0}``,
    ``{1}``: the operands; ``{out}``: ``, out=<buffer>`` (a workspace view, or an operand
    the result may overwrite) when ``takes_out``."""

    def emit(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
        anyb = any(o[1] for o in ops)
        # a batched operand of lower rank gets its batch axis kept apart ([B, D] ->
        # [B, 1, D]); an unbatched one broadcasts against the trailing axes as it is
        out_rank = len(e.ty.shape)
        codes = [gen.batched_like(o, out_rank) for o in ops]
        out = gen.out(e, anyb, e.args) if takes_out else ""
        return template.format(*codes, out=out), anyb

    numpy_rule(name, fresh=fresh, helpers=helpers)(emit)
    ELEMENTWISE_RULES.add(name)


for _name, _template in {
    "tanh": "np.tanh({0}{out})",
    "relu": "np.maximum({0}, 0{out})",
    "exp": "np.exp({0}{out})",
    "log": "np.log({0}{out})",
    "sqrt": "np.sqrt({0}{out})",
    "neg": "np.negative({0}{out})",
    "add": "np.add({0}, {1}{out})",
    "sub": "np.subtract({0}, {1}{out})",
    "mul": "np.multiply({0}, {1}{out})",
    "div": "np.divide({0}, {1}{out})",
    "maximum": "np.maximum({0}, {1}{out})",
    "minimum": "np.minimum({0}, {1}{out})",
}.items():
    numpy_elementwise(_name, _template)
numpy_elementwise("sigmoid", "_sigmoid({0}{out})", helpers={"_sigmoid": _sigmoid})
numpy_elementwise("gelu", "_gelu({0})", takes_out=False, helpers={"_gelu": _gelu})


@numpy_rule("dense", helpers={"_dense_by_value": dense_by_value})
def _dense(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    """``target = x @ W.T (+ b)``; the bias is added in place when the product already
    has the result's batched shape."""
    (x, xb, xr), (w, wb, _) = ops[:2]
    if gen.groups and any(isinstance(a, ParamRef) and a.name in gen.groups for a in e.args[1:]):
        # twins' weights: each member's rows times its own weight (and resident bias)
        if not (xb and xr == 1 and isinstance(e.args[1], ParamRef)):
            raise NotGroupable(f"dense on {x}: not rows of vectors times a weight")
        m = gen.members
        wts = [gen.weight(n, transposed=True) for n in gen.variants(e.args[1].name)]
        pans = [
            (gen.panels(n) if gen.use_workspace else None) or "None"
            for n in gen.variants(e.args[1].name)
        ]
        resident = len(ops) > 2 and isinstance(e.args[2], ParamRef)
        biases = (
            "(" + "".join(gen.weight(n) + ", " for n in gen.variants(e.args[2].name)) + ")"
            if resident
            else "None"
        )
        weights = f"({''.join(w + ', ' for w in wts)}), ({''.join(p + ', ' for p in pans)})"
        fused = gen.fused_rows(e.args[0]) if "None" not in pans else None
        if fused is not None:  # the argument's rows read in place by the product
            parts, shape, ws = fused
            code = (
                f"_gdense_from({parts}, {shape!r}, {ws}, {weights}, _segs, "
                f"{gen.buffer(e.ty)}, {biases})"
            )
            gen.ns["_gdense_from"] = gen.products.dense_from_by_member
        else:
            code = f"_gdense_rows({x}, {weights}, _segs, {gen.buffer(e.ty)}, {biases})"
            gen.ns["_gdense_rows"] = gen.products.dense_rows_by_member
        assert len(wts) == m
        if len(ops) == 2 or resident:
            return code, True
        gen.emit(f"{target} = {code}")
        gen.emit(f"{target} += {gen.batched_like(ops[2], len(e.ty.shape))}")
        return target, True
    elif wb:  # a weight that arrived as a batched value ([B, out, in])
        code = f"_dense_by_value(np, {x}, {w}, {xr}, {xb}, True)"
    elif not isinstance(e.args[1], ParamRef):
        code = f"np.matmul({x}, {w}.T{gen.slot(e.ty) if xb else ''})"
    else:
        wt = gen.weight(e.args[1].name, transposed=True)
        # rows [B, in] times a resident weight: the products' kernel where it packs the
        # weight (the native engine's, for few rows), NumPy's matmul otherwise
        panels = gen.panels(e.args[1].name) if xb and xr == 1 and gen.use_workspace else None
        fused = gen.fused_rows(e.args[0]) if panels is not None else None
        if fused is not None:  # the argument's rows read in place by the product
            gen.ns["_dense_from"] = gen.products.dense_from
            head = f"_dense_from({fused[0]}, {fused[1]!r}, {fused[2]}, "
        else:
            gen.ns["_dense_rows"] = gen.products.dense_rows
            head = f"_dense_rows({x}, "
        if panels is None:
            code = f"np.matmul({x}, {wt}{gen.slot(e.ty) if xb else ''})"
        elif len(ops) > 2 and not ops[2][1]:  # a resident bias: folded into the kernel
            return f"{head}{wt}, {panels}, {gen.buffer(e.ty)}, {ops[2][0]})", True
        else:
            code = f"{head}{wt}, {panels}, {gen.buffer(e.ty)})"
    batched = xb or wb or (len(ops) > 2 and ops[2][1])
    if len(ops) == 2:
        return code, batched
    bias = gen.batched_like(ops[2], len(e.ty.shape))
    if not (xb or wb):
        return f"np.add({code}, {bias})", batched
    gen.emit(f"{target} = {code}")
    gen.emit(f"{target} += {bias}")
    return target, batched


@numpy_rule("matmul")
def _matmul(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    (a, ab, ar), (b, bb, br) = ops
    if ab and bb:
        if ar == 2 and br == 2:
            code = f"np.matmul({a}, {b}{gen.slot(e.ty)})"
        elif ar == 2 and br == 1:
            code = f"np.matmul({a}, {b}[..., None])[..., 0]"
        elif ar == 1 and br == 2:
            code = f"np.matmul({a}[:, None, :], {b})[:, 0, :]"
        else:
            code = f"np.einsum('bk,bk->b', {a}, {b})"
    elif not ab and bb and br == 1:
        out = gen.slot(e.ty)
        code = f"np.matmul({b}, np.transpose({a}){out})" if ar == 2 else f"np.matmul({b}, {a}{out})"
    else:
        code = f"np.matmul({a}, {b}{gen.slot(e.ty) if ab or bb else ''})"
    return code, ab or bb


@numpy_rule("batch_matmul")
def _batch_matmul(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    (a, ab, _), (b, bb, _) = ops
    if dict(e.attrs).get("transpose_b"):
        b = f"np.swapaxes({b}, -1, -2)"
    return f"np.matmul({a}, {b})", ab or bb


@numpy_rule("embed")
def _embed(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    table, tb, _ = ops[0]
    idx, ib, _ = ops[1]
    if isinstance(e.args[1], Const):  # a constant id (the same row for everyone)
        idx = f"np.asarray({int(e.args[1].value)!r})"
    if tb:  # a table that arrived as a per-instance value: row ids[b] of table b
        ids = f"_ids({idx}, {table}.shape[1])"
        return f"{table}[np.arange(B), {ids}]", True
    ids = f"_ids({idx}, {table}.shape[0])"
    if not ib:
        return f"np.take({table}, {ids}, axis=0)", False
    # the ids are checked (_ids): mode="clip" spares the copy of ``out`` that NumPy makes,
    # and writes back, under the default mode="raise" (BiRNN small b64: 2 x 1.3 MB a run)
    return f'np.take({table}, {ids}, axis=0{gen.slot(e.ty)}, mode="clip")', True


@numpy_rule("concat")
def _concat(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    if target in gen.homes:  # gathered into place by the prologue (_KernelGen.plan_homes)
        return target, True
    anyb = any(o[1] for o in ops)
    ax = (dict(e.attrs).get("axis", 0) % ops[0][2]) + (1 if anyb else 0)
    parts = [
        o[0] if o[1] or not anyb else f"np.broadcast_to({o[0]}, (B,) + {o[0]}.shape)" for o in ops
    ]
    out = gen.slot(e.ty) if anyb else ""
    return f"np.concatenate(({', '.join(parts)},), axis={ax}{out})", anyb


def _axis(e: OpCall, operand: Operand, default: int) -> int:
    """The attribute ``axis`` of ``e`` on the batched operand (past its batch axis)."""
    _, xb, r = operand
    return dict(e.attrs).get("axis", default) % r + (1 if xb else 0)


@numpy_rule("split", fresh=False)
def _split(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    x, xb, _ = ops[0]
    return f"np.split({x}, {dict(e.attrs)['sections']}, axis={_axis(e, ops[0], 0)})", xb


@numpy_rule("slice", fresh=False)
def _slice(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    x, xb, _ = ops[0]
    attrs = dict(e.attrs)
    idx = "".join(":, " for _ in range(_axis(e, ops[0], 0))) + f"{attrs['start']}:{attrs['stop']}"
    return f"{x}[{idx}]", xb


@numpy_rule("reshape", fresh=False)
def _reshape(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    x, xb, _ = ops[0]
    shape = tuple(e.ty.shape)
    return (f"{x}.reshape((B,) + {shape!r})" if xb else f"{x}.reshape({shape!r})"), xb


@numpy_rule("transpose", fresh=False)
def _transpose(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    x, xb, r = ops[0]
    axes = dict(e.attrs).get("axes") or tuple(reversed(range(r)))
    if xb:
        axes = (0,) + tuple(a + 1 for a in axes)
    return f"np.transpose({x}, {tuple(axes)!r})", xb


@numpy_rule("softmax", helpers={"_softmax": _softmax})
def _softmax_rule(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    return f"_softmax({ops[0][0]}, {_axis(e, ops[0], -1)})", ops[0][1]


@numpy_rule("layer_norm", helpers={"_layer_norm": _layer_norm})
def _layer_norm_rule(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    rank = len(e.ty.shape)
    g, b = (gen.batched_like(o, rank) for o in ops[1:])
    eps = dict(e.attrs).get("eps", 1e-5)
    return f"_layer_norm({ops[0][0]}, {g}, {b}, {eps!r})", any(o[1] for o in ops)


@numpy_rule("sum", "mean", "max")
def _reduce(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    x, xb, r = ops[0]
    attrs = dict(e.attrs)
    if attrs.get("axis") is None:
        ax = tuple(range(1 if xb else 0, r + (1 if xb else 0)))
    else:
        ax = _axis(e, ops[0], 0)
    keep = bool(attrs.get("keepdims"))
    return f"np.{e.op}({x}, axis={ax!r}, keepdims={keep})", xb


@numpy_rule("scalar", fresh=False)
def _scalar(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    x, xb, _ = ops[0]
    if not xb:
        return f"np.float32({x})", False
    a = e.args[0]
    if isinstance(a, Var) and a.name in gen.host_float:
        x = f"{x}.view(np.float64)"
    return f"np.asarray({x}, dtype=np.float32)", True


@numpy_rule("zeros", "ones")
def _fill(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str) -> tuple[str, bool]:
    return f"np.{e.op}((B,) + {tuple(e.ty.shape)!r}, dtype=np.float32)", True


PER_INSTANCE_RULES: dict[str, NumpyRule] = {}
"""Op name -> its rule in the per-instance flavour where it differs from :data:`NUMPY_RULES`
(every operand is one instance's: no batch axis; see :func:`compile_numpy_kernel`)."""


def _per_instance(*names: str, helpers: dict[str, Any] | None = None):
    def deco(emit):
        for name in names:
            PER_INSTANCE_RULES[name] = NumpyRule(emit, True, dict(helpers or {}))
        return emit

    return deco


@_per_instance("sigmoid", helpers={"_ONE": _ONE})
def _sigmoid_one(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    """``1 / (1 + exp(-x))`` as the interpreter computes it (float32, bit for bit), in
    ufunc calls without Python scalars or ``out=``: on one instance's small arrays their
    call overhead is the cost (half a microsecond less than :func:`_sigmoid`)."""
    return f"np.reciprocal(np.add(np.exp(np.negative({ops[0][0]})), _ONE))", False


@_per_instance("embed", helpers={"_row": _row})
def _embed_one(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    idx = repr(int(e.args[1].value)) if isinstance(e.args[1], Const) else ops[1][0]
    return f"_row({ops[0][0]}, {idx})", False


@_per_instance("zeros", "ones")
def _fill_one(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    return f"np.{e.op}({tuple(e.ty.shape)!r}, dtype=np.float32)", False


@_per_instance("matmul")
def _matmul_one(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    """``matmul`` of 1-d / 2-d tensors (its type rule allows no others) is ``np.dot``, the
    same product with less call overhead (a third of a microsecond per call)."""
    return f"np.dot({ops[0][0]}, {ops[1][0]})", False


@_per_instance("dense", helpers={"_dense_by_value": dense_by_value})
def _dense_one(gen: _KernelGen, e: OpCall, ops: list[Operand], target: str):
    """``x @ W.T (+ b)`` for one instance: ``np.dot`` (a GEMV for a vector; less call
    overhead than ``np.matmul``) when ``x`` has at most two axes; the bias (``[out]``, the
    product's last axis) added in place into the fresh product."""
    (x, _, xr), (w, _, _) = ops[:2]
    wt = (
        gen.weight(e.args[1].name, transposed=True) if isinstance(e.args[1], ParamRef) else f"{w}.T"
    )
    code = f"np.dot({x}, {wt})" if xr <= 2 else f"np.matmul({x}, {wt})"
    if len(ops) == 2:
        return code, False
    gen.emit(f"{target} = {code}")
    gen.emit(f"{target} += {ops[2][0]}")
    return target, False


class _KernelGen:
    def __init__(
        self,
        f: Function,
        weights: dict[str, np.ndarray],
        use_workspace: bool = True,
        per_instance: bool = False,
        groups: dict[str, tuple[str, ...]] | None = None,
        fuse: bool = True,
        products: Products = NUMPY_PRODUCTS,
    ):
        self.f = f
        self.products = products
        # twins' group kernel: each varying weight -> the weight every member reads there
        self.groups = groups
        self.members = len(next(iter(groups.values()))) if groups else 1
        self.per_instance = per_instance
        self.use_workspace = use_workspace and not per_instance
        self.ns = dict(HELPERS)
        self.weights = weights
        self.lines: list[str] = []
        self.batched: dict[str, bool] = {}
        self.rank: dict[str, int] = {}
        self.names: dict[str, str] = {}
        self.slots: list[tuple[tuple[int, ...], str]] = []
        self.host_float: set[str] = set()
        self.slot_of: dict[str, int] = {}  # var -> the workspace slot holding its value
        self.reused: str | None = None  # the operand the last op wrote over
        self.homes: set[str] = set()  # concats whose buffer the prologue filled
        self.tuple_names: dict[str, list[str | None]] = {}  # tuple var -> its fields' vars
        self.prologue: list[str] = []
        # arguments (or homed concats of arguments) whose one reader can take their rows
        # where they lie: var -> (parts' codes, per-instance shape, workspace, the
        # prologue lines that gather them); a reader that takes one (fused_rows) drops
        # those lines
        self.fusable: dict[str, tuple[tuple[str, ...], tuple[int, ...], str, list[int]]] = {}
        self.dropped: set[int] = set()
        # elementwise chains as one call of the products' rowprog, where they have one
        self.rowprog = products.rowprog if self.use_workspace and fuse else None
        self.chains = 0

    def name(self, var: str) -> str:
        return self.names.get(var, ident("x_", var))

    def weight(self, w: str, transposed: bool = False) -> str:
        key = ident("WT_" if transposed else "W_", w)  # (a suffix could meet a name)
        if key not in self.ns:
            a = self.weights[w]
            self.ns[key] = np.ascontiguousarray(a.T) if transposed else a
        return key

    def panels(self, w: str) -> str | None:
        """The name of weight ``w``'s panels for the products' kernel (their ``pack`` of
        its transpose, made once per kernel), or None when they take no panels or not
        this weight's (then the product is NumPy's ``matmul``)."""
        key = ident("WP_", w)
        if key not in self.ns:
            self.ns[key] = self.products.pack(self.ns[self.weight(w, transposed=True)])
        return key if self.ns[key] is not None else None

    def variants(self, w: str) -> tuple[str, ...]:
        """The weight each member of a twin group reads where the first reads ``w``."""
        return self.groups.get(w) or (w,) * self.members

    def operand(self, e) -> tuple[str, bool, int]:
        """(code, batched?, per-instance rank)."""
        if isinstance(e, Var):
            return self.name(e.name), self.batched[e.name], self.rank[e.name]
        if isinstance(e, ParamRef) and self.groups and e.name in self.groups:
            # a weight that differs per member, as a batched operand: each row its
            # member's (stacked once, repeated per call: small weights only, see twins)
            if self.weights[e.name].size > MAX_ROW_WEIGHT:
                return "_NOT_GROUPABLE_", True, len(self.weights[e.name].shape)
            key = ident("G_", e.name)
            if key not in self.ns:
                self.ns[key] = np.stack([self.weights[n] for n in self.groups[e.name]])
            self.ns["_seg_rows"] = seg_rows
            return f"_seg_rows({key}, _segs)", True, len(self.weights[e.name].shape)
        if isinstance(e, ParamRef):
            return self.weight(e.name), False, len(self.weights[e.name].shape)
        if isinstance(e, Const):
            return f"np.float32({float(e.value)!r})", False, 0
        raise NotImplementedError(type(e).__name__)

    def count_uses(self) -> None:
        """Uses of each variable in the body (outputs count as uses: never overwritten)."""
        self.uses: dict[str, int] = {}
        for x in walk(self.f.body):
            if isinstance(x, Var):
                self.uses[x.name] = self.uses.get(x.name, 0) + 1
        self.owned: set[str] = set()

    def buffer(self, ty: TensorType) -> str:
        """A new workspace view for a batched result of type ``ty`` (needs the workspace)."""
        self.slots.append((tuple(ty.shape), ty.dtype))
        return f"_buf({len(self.slots) - 1}, B)"

    def slot(self, ty: TensorType) -> str:
        """``, out=<workspace view>`` for a batched result of type ``ty``."""
        return f", out={self.buffer(ty)}" if self.use_workspace else ""

    def reusable(self, e, out_ty) -> str | None:
        """The buffer of operand ``e`` if the op's result may be written over it."""
        if not isinstance(e, Var) or e.name not in self.owned or self.uses.get(e.name) != 1:
            return None
        if not self.batched[e.name] or e.ty != out_ty:
            return None
        self.reused = e.name
        return self.name(e.name)

    def generate(self) -> str:
        """The kernel's source. It takes either calling convention of
        :mod:`acrobat.backends.base`: gathered ``[B, ...]`` arrays (returns the outputs),
        or ``(arena buffer, rows)`` pairs and ``out=views`` (writes the outputs there;
        results computed into a workspace slot are computed into the view instead)."""
        self.count_uses()
        f = self.f
        args = []
        for p in f.params:
            args.append(self.name(p.name))
            self.batched[p.name] = not self.per_instance
            if p.ty == FLOAT:  # recorded as the bits of a float64 (see codegen.host)
                self.host_float.add(p.name)
            self.rank[p.name] = len(p.ty.shape) if isinstance(p.ty, TensorType) else 0
        body = f.body
        bindings = body.bindings if isinstance(body, Let) else ()
        # Without a workspace (results of their own) a kernel takes gathered arrays only:
        # there is nowhere to take scattered rows into, so no prologue.
        homed = self.plan_homes(bindings) if self.use_workspace else set()
        for p in f.params:  # other tensor arguments: a view of their rows, or rows taken
            if self.use_workspace and isinstance(p.ty, TensorType) and p.name not in homed:
                shape = tuple(p.ty.shape)
                ws = self.slot(TensorType((math.prod(shape),), p.ty.dtype))[len(", out=") :]
                x = self.name(p.name)
                if self.fuses(p.ty) and self.uses.get(p.name) == 1:
                    self.fusable[p.name] = ((x,), shape, ws, [len(self.prologue)])
                self.prologue.append(f"{x} = _gather({x}, {shape!r}, {ws})")
        outs = body.body if isinstance(body, Let) else body
        i = 0
        while i < len(bindings):
            j = self.chain_end(bindings, i)
            if j > i:
                self.bind_chain(bindings[i:j], [b.value for b in bindings[j:]] + [outs])
                i = j
            else:
                self.bind(bindings[i].var, bindings[i].value)
                i += 1
        types = f.ret.fields if isinstance(f.ret, TupleType) else (f.ret,)
        names: list[str | None] = [None] * len(types)
        if isinstance(outs, TupleExpr):
            items = [self.operand(o) for o in outs.fields]
            names = [o.name if isinstance(o, Var) else None for o in outs.fields]
        elif isinstance(f.ret, TupleType):  # a tuple-valued variable (e.g. a split)
            parts = getattr(self, "tuple_parts", {}).get(outs.name)
            whole = self.name(outs.name)
            items = parts or [(f"{whole}[{j}]", self.batched[outs.name]) for j in range(len(types))]
            names = self.tuple_names.get(outs.name, names)
        else:
            items = [self.operand(outs)]
            names = [outs.name if isinstance(outs, Var) else None]
        if self.per_instance:  # one instance's arrays in, its results out
            head = f"def {ident('kernel_', f.name)}({', '.join(args)}):"
            ret = (
                items[0][0]
                if not isinstance(f.ret, TupleType)
                else f"({''.join(c + ', ' for c, *_ in items)})"
            )
            return "\n".join([head] + self.lines + [f"    return {ret}"]) + "\n"
        results, direct = [], {}
        for j, ((code, batched, *_), ty, v) in enumerate(zip(items, types, names)):
            if not batched:
                code = f"np.broadcast_to({code}, (B,) + {tuple(ty.shape)!r})"
            results.append(code)
            i = self.slot_of.get(v) if batched and v is not None else None
            if i is not None and i not in direct.values() and self.slots[i][1] == ty.dtype:
                direct[j] = i  # computed straight into out[j]
        segs = ", _segs=None" if self.groups else ""
        head = [
            f"def {ident('kernel_', f.name)}(B, {''.join(a + ', ' for a in args)}out=None{segs}):"
        ]
        for j, i in direct.items():
            shape = self.slots[i][0]
            view = (
                f"out[{j}]"
                if shape == tuple(types[j].shape)
                else (f"out[{j}].reshape((B,) + {shape!r})")
            )
            head.append(f"    _s{i} = {view} if out is not None else _buf({i}, B)")
        prologue = [x for i, x in enumerate(self.prologue) if i not in self.dropped]
        src = "\n".join(["    " + x for x in prologue] + self.lines)
        for i in direct.values():
            src = src.replace(f"_buf({i}, B)", f"_s{i}")
        tail = ["    if out is not None:"]
        tail += [f"        out[{j}][...] = {r}" for j, r in enumerate(results) if j not in direct]
        tail.append("        return None")
        tail.append(f"    return ({', '.join(results)},)")
        return "\n".join(head + [src] + tail) + "\n"

    def chain_end(self, bindings, i: int) -> int:
        """The end (exclusive) of the elementwise chain starting at ``bindings[i]`` that
        the fused kernel runs, or ``i`` when none starts there: consecutive ops of
        :data:`ROWPROG_OPS` whose result and tensor operands are float32 of one shape
        ``[n]`` and batched (a batched operand, or a result of the chain, in each op);
        unbatched operands must be of that shape too (a bias), or constants. Worth a call
        from two ops, or one sigmoid (four NumPy calls)."""
        if self.rowprog is None:
            return i
        inside: set[str] = set()
        shape = None
        j = i
        while j < len(bindings):
            e = bindings[j].value
            if not (
                isinstance(e, OpCall)
                and e.op in ROWPROG_OPS
                and isinstance(e.ty, TensorType)
                and e.ty.dtype == "float32"
                and len(e.ty.shape) == 1
                and 0 < e.ty.shape[0] <= ROWPROG_MAX_WIDTH
                and (shape is None or e.ty.shape == shape)
            ):
                break
            batched = False
            for a in e.args:
                if isinstance(a, Const):
                    if not isinstance(a.value, int | float) or isinstance(a.value, bool):
                        break
                elif isinstance(a, Var | ParamRef) and a.ty == e.ty:
                    if isinstance(a, Var):
                        batched = batched or a.name in inside or self.batched.get(a.name, False)
                    elif self.groups and a.name in self.groups:
                        batched = True  # each row its member's
                else:
                    break
            else:
                if batched:
                    shape = e.ty.shape
                    inside.add(bindings[j].var.name)
                    j += 1
                    continue
            break
        ops = [bindings[k].value.op for k in range(i, j)]
        return j if len(ops) >= 2 or ops == ["sigmoid"] else i

    def bind_chain(self, chain, rest) -> None:
        """An elementwise chain (:meth:`chain_end`) as one call of the native fused
        kernel: its values used after it (``rest``: the expressions that follow) go to
        fresh workspace slots, the others live only in the kernel's row vectors. The
        chain's NumPy code stays as the fallback for layouts the kernel declines."""
        k = self.chains
        self.chains += 1
        defined = {b.var.name for b in chain}
        later: set[str] = set()
        for e in rest:
            later.update(x.name for x in walk(e) if isinstance(x, Var) and x.name in defined)
        inputs: dict[str, int] = {}  # operand code -> input number
        consts: list[float] = []
        temps: dict[str, int] = {}  # chain var -> temp number
        instrs: list[tuple[int, str | int, str | int, str | int]] = []
        fallback: list[str] = []
        gathers: list[str] = []  # the fallback's gathers of inputs the call reads in place

        def operand(a) -> tuple[str, str | int]:
            """(symbolic operand for the program, its NumPy code for the fallback)."""
            if isinstance(a, Var) and a.name in temps:
                return f"t{temps[a.name]}", f"_f{k}_{temps[a.name]}"
            if isinstance(a, Const):
                consts.append(float(a.value))
                return f"c{len(consts) - 1}", f"np.float32({float(a.value)!r})"
            code = self.operand(a)[0]
            fused = self.fused_rows(a, whole=True)
            if fused is not None:  # the native call reads its rows in place
                gathers.append(f"{code} = _gather({code}, {fused[1]!r}, {fused[2]})")
            inputs.setdefault(code, len(inputs))
            return f"i{inputs[code]}", code

        for b in chain:
            e = b.value
            op, template = ROWPROG_OPS[e.op]
            parts = [operand(a) for a in e.args]
            temps[b.var.name] = len(temps)
            sym = [p[0] for p in parts] + ["i0"] * (2 - len(parts))
            instrs.append((op, f"t{temps[b.var.name]}", sym[0], sym[1]))
            code = template.format(*(p[1] for p in parts))
            fallback.append(f"_f{k}_{temps[b.var.name]} = {code}")
        nin, nconst = len(inputs), len(consts)

        def number(s: str) -> int:
            base = {"i": 0, "c": nin, "t": nin + nconst}[s[0]]
            return base + int(s[1:])

        outs = [b.var for b in chain if b.var.name in later]
        n = chain[0].value.ty.shape[0]
        words = [n, nin, nconst, len(temps), len(instrs)]
        for op, d, a, b2 in instrs:
            words += [op, number(d), number(a), number(b2)]
        words.append(len(outs))
        words += [nin + nconst + temps[v.name] for v in outs]
        self.ns[f"_EWK{k}"] = np.array(words, np.int32)
        self.ns[f"_EWC{k}"] = np.array(consts, np.float32)
        self.ns["_rowprog"] = self.rowprog
        self.ns["_sigmoid"] = _sigmoid
        targets = []
        for v in outs:
            target = self.name(v.name)
            self.emit(f"{target} = {self.buffer(v.ty)}")
            self.slot_of[v.name] = len(self.slots) - 1
            self.owned.add(v.name)
            self.batched[v.name], self.rank[v.name] = True, 1
            targets.append(target)
        args = "".join(c + ", " for c in list(inputs) + targets)
        ops = " ".join(b.value.op for b in chain)
        self.emit(f"# one native call, row by row (acrobat/native/rowprog.c): {ops}; else NumPy")
        self.emit(f"if not _rowprog(B, _EWK{k}, _EWC{k}, ({args})):")
        for line in gathers + fallback:
            self.emit("    " + line)
        for v, target in zip(outs, targets):
            self.emit(f"    {target}[...] = _f{k}_{temps[v.name]}")

    def fuses(self, ty: TensorType) -> bool:
        """Whether an argument of type ``ty`` may reach its reader ungathered: rows of
        float32 vectors, and the native module loaded (its product and fused chains read
        ``(arena buffer, rows)`` pairs in place)."""
        return (
            self.use_workspace
            and self.products.reads_in_place
            and ty.dtype == "float32"
            and len(ty.shape) == 1
        )

    def fused_rows(self, e, whole: bool = False):
        """``(parts, shape, ws)`` when operand ``e`` is a kernel argument, or a homed
        concat of arguments (unless ``whole``: then only an argument itself), that
        nothing else reads: the caller passes ``parts`` (their codes, as a tuple
        expression) to a reader that takes rows where they lie, and the prologue's gather
        of them is dropped; ``ws`` and ``shape`` are the gather's, for the fallback. Else
        None (the prologue gathers ``e`` as usual)."""
        if not isinstance(e, Var) or e.name not in self.fusable:
            return None
        parts, shape, ws, lines = self.fusable[e.name]
        if whole and parts != (self.name(e.name),):
            return None
        del self.fusable[e.name]
        self.dropped.update(lines)
        return "(" + "".join(x + ", " for x in parts) + ")", shape, ws

    def plan_homes(self, bindings) -> set[str]:
        """Tensor arguments of one type concatenated along their first axis are gathered
        by ONE take straight into the concat's buffer (:func:`_gather_cat`, in the
        prologue); every use reads them as views of it, and the concat is free."""
        params = {p.name: p.ty for p in self.f.params if isinstance(p.ty, TensorType)}
        homed: set[str] = set()
        for b in bindings:
            e = b.value
            if not (isinstance(e, OpCall) and e.op == "concat" and isinstance(e.ty, TensorType)):
                continue
            names = [a.name if isinstance(a, Var) else None for a in e.args]
            if not (
                e.ty.shape
                and dict(e.attrs).get("axis", 0) % len(e.ty.shape) == 0
                and all(n in params and n not in homed for n in names)
                and len(set(names)) == len(names)
                and len({params[n] for n in names}) == 1
                and params[names[0]].shape
            ):
                continue
            target = self.name(b.var.name)
            ws = self.slot(e.ty)[len(", out=") :]
            self.slot_of[b.var.name] = len(self.slots) - 1
            xs = [self.name(n) for n in names]
            shape = tuple(e.ty.shape)
            first = len(self.prologue)
            self.prologue.append(
                f"{target} = _gather_cat(({''.join(x + ', ' for x in xs)}), {shape!r}, {ws})"
            )
            step = params[names[0]].shape[0]
            for j, x in enumerate(xs):
                self.prologue.append(f"{x} = {target}[:, {j * step}:{(j + 1) * step}]")
            if (
                self.fuses(e.ty)
                and len(xs) <= 8  # the native kernel's parts
                and self.uses.get(b.var.name) == 1
                and all(self.uses.get(n) == 1 for n in names)
            ):
                lines = list(range(first, len(self.prologue)))
                self.fusable[b.var.name] = (tuple(xs), shape, ws, lines)
            self.homes.add(target)
            homed.update(names)
        return homed

    def bind(self, var: Var, e) -> None:
        target = self.name(var.name)
        if isinstance(e, Var):
            self.names[var.name] = self.name(e.name)
            if e.name in self.fusable and self.uses.get(var.name) == 1:
                self.fusable[var.name] = self.fusable.pop(e.name)  # its one reader's name
            if e.name in self.slot_of:
                self.slot_of[var.name] = self.slot_of[e.name]
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
            self.tuple_names[var.name] = [x.name if isinstance(x, Var) else None for x in e.fields]
            return
        if isinstance(e, Proj):
            parts = getattr(self, "tuple_parts", {}).get(e.tup.name)
            if parts is not None:
                self.names[var.name], self.batched[var.name], self.rank[var.name] = parts[e.index]
                field = (self.tuple_names.get(e.tup.name) or [None] * (e.index + 1))[e.index]
                if field in self.slot_of:
                    self.slot_of[var.name] = self.slot_of[field]
                return
            self.lines.append(f"    {target} = {self.name(e.tup.name)}[{e.index}]")
            self.batched[var.name] = self.batched[e.tup.name]
            self.rank[var.name] = len(var.ty.shape)
            return
        rule = (self.per_instance and PER_INSTANCE_RULES.get(e.op)) or NUMPY_RULES.get(e.op)
        if rule is None:
            raise missing_rule(e.op, "NumPy", self.f.name)
        self.ns.update(rule.helpers)
        n_slots, self.reused = len(self.slots), None
        code, batched = rule.emit(self, e, [self.operand(a) for a in e.args], target)
        if code != target:
            self.emit(f"{target} = {code}")
        if rule.fresh and batched and target not in self.homes:  # homes are read by views
            self.owned.add(var.name)
            if len(self.slots) == n_slots + 1 and self.slots[-1][0] == tuple(e.ty.shape):
                self.slot_of[var.name] = n_slots
            elif len(self.slots) == n_slots and self.reused in self.slot_of:
                self.slot_of[var.name] = self.slot_of[self.reused]
        elif e.op == "reshape" and isinstance(e.args[0], Var) and e.args[0].name in self.slot_of:
            self.slot_of[var.name] = self.slot_of[e.args[0].name]  # the same rows, reshaped
        self.batched[var.name] = batched
        self.rank[var.name] = len(e.ty.shape) if isinstance(e.ty, TensorType) else 0

    def emit(self, line: str) -> None:
        """One statement of the kernel's body."""
        self.lines.append("    " + line)

    def out(self, e: OpCall, batched: bool, candidates=()) -> str:
        """``, out=<buffer>`` for the result of ``e``: an operand among ``candidates`` it
        may overwrite, else a workspace view when the result is batched, else nothing."""
        for a in candidates:
            buf = self.reusable(a, e.ty)
            if buf:
                return f", out={buf}"
        return self.slot(e.ty) if batched else ""

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


def compile_numpy_kernel(
    f: Function,
    weights: dict[str, np.ndarray],
    reuse_workspace: bool = True,
    per_instance: bool = False,
    fuse: bool = True,
    products: Products = NUMPY_PRODUCTS,
) -> NumpyKernel:
    """Generate and compile the batched NumPy function of one kernel. With
    ``reuse_workspace`` its results may live in buffers the next call overwrites (the
    executor copies them into arenas); without, NumPy allocates every result, so results
    are arrays of their own (for callers that keep them).

    ``per_instance`` compiles the kernel's other flavour, for the direct strategy:
    ``fn(*args)`` takes ONE instance's values (tensors of their own shapes, no batch
    axis; a host int as an int, a host float as a float) and returns its result (a tuple
    only when the kernel returns one), computed as a hand-written per-instance loop would:
    no ``B``, no ``out=``, no workspace (:data:`PER_INSTANCE_RULES` overrides the batched
    rules where one instance is cheaper another way). The kernel never writes over its
    arguments or its own results, which may be views of the weights (an embedding row)."""
    gen = _KernelGen(f, weights, reuse_workspace, per_instance, fuse=fuse, products=products)
    source = gen.generate()
    ns = gen.ns
    ns["_buf"] = workspace(gen.slots)
    exec(compile(source, f"<kernel {f.name}>", "exec"), ns)  # our own generated code
    return NumpyKernel(f.name, source, ns[ident("kernel_", f.name)])


def compile_numpy_group(
    functions: list[Function],
    varying: dict[str, tuple[str, ...]],
    weights: dict[str, np.ndarray],
    fuse: bool = True,
    products: Products = NUMPY_PRODUCTS,
) -> NumpyKernel | None:
    """The group kernel of twin kernels (:mod:`acrobat.codegen.twins`): ``fn(B, *args,
    out=views, _segs=segs)`` runs a batch of the members' nodes as one call, ``segs``
    being ``(member, rows)`` pairs in row order. Ops that read a weight listed in
    ``varying`` run per member on its rows (a ``dense``), or read each row's member's
    weight (an elementwise op on a bias); everything else runs once over all rows. None
    when this generator cannot write it (then the members run apart)."""
    f = functions[0]
    name = "_".join(["group"] + [g.name for g in functions])
    f = dataclasses.replace(f, name=name)
    gen = _KernelGen(f, weights, True, False, groups=varying, fuse=fuse, products=products)
    try:
        source = gen.generate()
    except NotGroupable:
        return None
    if "_NOT_GROUPABLE_" in source:  # a large weight read per row: not split by member
        return None
    ns = gen.ns
    ns["_buf"] = workspace(gen.slots)
    exec(compile(source, f"<kernel {name}>", "exec"), ns)  # our own generated code
    return NumpyKernel(name, source, ns[ident("kernel_", name)])
