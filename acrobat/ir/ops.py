"""The op registry: every tensor and host op the modelling language knows.

Each :class:`Op` carries, in one place, its name, arity, static attributes (and which of
them may be written positionally), type rule, FLOP rule, fusion kind (:class:`OpKind`)
and NumPy implementation (the per-instance reference semantics). The lowerings live one
layer up, in tables keyed by op name, as JAX keeps ``batching.primitive_batchers[op]``
beside the op: ``acrobat.codegen.numpy_kernels.NUMPY_RULES`` (batched NumPy) and
``acrobat.codegen.cuda_kernels.CUDA_RULES`` (CUDA). Every op of a kind that runs in a
kernel (``OpKind.in_kernel``) has one rule in each; host-side kinds have none.
``acrobat.codegen.elementwise.define_elementwise_op`` adds an elementwise op to the
registry and both tables in one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from acrobat.errors import AcrobatShapeError, AcrobatTypeError
from acrobat.ir.types import (
    BOOL,
    FLOAT,
    INT,
    AdtType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
)
from acrobat.registry import Registry

REQUIRED = object()
"""Marks an attribute without a default."""


class OpKind(StrEnum):
    """The fusion kind of an op (a ``StrEnum``: members compare equal to their names)."""

    ELEMWISE = "elemwise"  # one input, same shape
    BROADCAST = "broadcast"  # numpy broadcasting of two inputs
    INJECTIVE = "injective"  # data movement: reshape/slice/concat/split/transpose
    REDUCTION = "reduction"  # sum/mean/max/softmax/layer_norm
    OPAQUE = "opaque"  # dense/matmul/embed: fusion anchors
    CREATE = "create"  # zeros/ones/scalar
    GHOST = "ghost"  # depth-only no-ops
    HOST_READ = "host_read"  # tensor-to-host reads that make control flow tensor-dependent
    HOST = "host"  # scalar arithmetic in the host program

    @property
    def in_kernel(self) -> bool:
        """Ops of this kind run inside kernels (so each backend needs a rule for them);
        the others stay in the host program and never reach a kernel."""
        return self not in (OpKind.GHOST, OpKind.HOST_READ, OpKind.HOST)


FlopRule = Callable[[list[Type], Type, dict[str, Any]], int]
"""``(argument types, result type, attributes) -> FLOPs of one instance``."""


def per_element(k: int = 1) -> FlopRule:
    """``k`` FLOPs per element of the result or the first tensor argument, whichever is
    larger; nothing for a host result."""

    def flops(ts: list[Type], out: Type, attrs: dict[str, Any]) -> int:
        if not isinstance(out, TensorType):
            return 0
        arg = ts[0] if ts and isinstance(ts[0], TensorType) else out
        return max(out.size, arg.size) * k

    return flops


def no_flops(ts: list[Type], out: Type, attrs: dict[str, Any]) -> int:
    """Data movement, creation and bookkeeping: no arithmetic."""
    return 0


def product_flops(ts: list[Type], out: Type, attrs: dict[str, Any]) -> int:
    """A product: a multiply-add (2 FLOPs) per inner element per output, plus the bias."""
    a = ts[0]
    k = a.shape[-1] if a.shape else 1
    n = out.size if isinstance(out, TensorType) else 0
    return 2 * k * n + (n if len(ts) > 2 else 0)


@dataclass(frozen=True)
class Op:
    """One registered op."""

    name: str
    min_arity: int
    max_arity: int | None  # None: variadic
    kind: OpKind
    shape_rule: Callable[[list[Type], dict[str, Any]], Type]
    impl: Callable[..., Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    doc: str = ""
    flops: FlopRule = per_element(1)
    positional: tuple[str, ...] = ()  # attributes the frontend accepts after the tensors

    @property
    def reads_tensor_to_host(self) -> bool:
        return self.kind == OpKind.HOST_READ


REGISTRY: Registry[Op] = Registry("op")


def register(
    name: str,
    arity: int | tuple[int, int | None],
    kind: OpKind | str,
    impl: Callable[..., Any],
    attrs: dict[str, Any] | None = None,
    doc: str = "",
    *,
    flops: FlopRule | None = None,
    positional: tuple[str, ...] = (),
):
    """Decorator registering ``shape_rule`` as the type rule of a new op.

    ``flops`` defaults to one FLOP per element (:func:`per_element`); ``positional`` names
    the attributes that may follow the tensor arguments in the source (``split(x, 3)``)."""

    lo, hi = (arity, arity) if isinstance(arity, int) else arity
    kind = OpKind(kind)
    attrs = dict(attrs or {})
    REGISTRY.check_free(name)
    if not set(positional) <= set(attrs):
        raise AcrobatTypeError(f"{name}: positional attributes {positional} are not all attributes")

    def deco(rule):
        REGISTRY.add(
            name,
            Op(name, lo, hi, kind, rule, impl, attrs, doc, flops or per_element(1), positional),
        )
        return rule

    return deco


def unregister(name: str) -> None:
    """Remove an op added by :func:`register` (tests that define ops clean up with it)."""
    REGISTRY.pop(name, None)


def op_flops(op: str, arg_types: list[Type], out: Type, attrs: dict[str, Any]) -> int:
    """FLOPs of one instance of ``op`` (multiply-add = 2), by the op's FLOP rule."""
    return REGISTRY[op].flops(arg_types, out, attrs)


# ----------------------------------------------------------------------------- helpers


def _tensor(t: Type, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise AcrobatTypeError(f"{what} must be a tensor, got {t}")
    return t


def _tensors(ts: list[Type], op: str) -> list[TensorType]:
    return [_tensor(t, f"argument {i + 1} of {op}") for i, t in enumerate(ts)]


def _axis(axis: int, rank: int, op: str) -> int:
    if not isinstance(axis, int) or not -rank <= axis < max(rank, 1):
        raise AcrobatShapeError(f"{op}: axis {axis} is out of range for a rank-{rank} tensor")
    return axis % rank if rank else 0


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...], op: str) -> tuple[int, ...]:
    """NumPy broadcasting of two shapes, with a shape error naming both."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            raise AcrobatShapeError(
                f"{op}: shapes {list(a)} and {list(b)} do not broadcast (dimension {-i}: {x} vs {y})"
            )
        out.append(max(x, y))
    return tuple(reversed(out))


def _same_dtype(ts: list[TensorType], op: str) -> str:
    dtypes = {t.dtype for t in ts}
    if len(dtypes) > 1:
        raise AcrobatTypeError(f"{op}: mixed dtypes {sorted(dtypes)}")
    return ts[0].dtype


def _as_shape(v: Any, op: str) -> tuple[int, ...]:
    if isinstance(v, int):
        v = (v,)
    if not isinstance(v, tuple) or not all(isinstance(d, int) for d in v):
        raise AcrobatTypeError(f"{op}: shape must be an int or a tuple of ints, got {v!r}")
    return v


# ----------------------------------------------------------------------------- elementwise


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype, copy=False)


_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu(x):
    # tanh approximation (as in BERT's reference code)
    return (0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x * x * x)))).astype(
        x.dtype, copy=False
    )


_UNARY = {
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0).astype(x.dtype, copy=False),
    "gelu": _gelu,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "neg": np.negative,
}


def same_type_rule(name: str):
    """The type rule of an elementwise op: the type of its one tensor argument."""

    def rule(ts, attrs):
        return _tensor(ts[0], f"argument of {name}")

    return rule


for _name, _fn in _UNARY.items():
    register(
        _name,
        1,
        OpKind.ELEMWISE,
        _fn,
        doc=f"elementwise {_name}",
        flops=per_element(5 if _name == "gelu" else 1),
    )(same_type_rule(_name))

_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def broadcast_type_rule(name: str):
    """The type rule of a broadcasting op: NumPy broadcasting of two tensors of one dtype."""

    def rule(ts, attrs):
        a, b = _tensors(ts, name)
        return TensorType(broadcast_shapes(a.shape, b.shape, name), _same_dtype([a, b], name))

    return rule


for _name, _fn in _BINARY.items():
    register(_name, 2, OpKind.BROADCAST, _fn, doc=f"broadcasting {_name}")(
        broadcast_type_rule(_name)
    )


# ----------------------------------------------------------------------------- linear algebra


def _dense(x, w, b=None):
    y = x @ w.T
    return y + b if b is not None else y


@register(
    "dense",
    (2, 3),
    OpKind.OPAQUE,
    _dense,
    doc="x @ W.T + b; W is [out, in]",
    flops=product_flops,
)
def _dense_rule(ts, attrs):
    x, w, *b = _tensors(ts, "dense")
    if len(w.shape) != 2 or not x.shape:
        raise AcrobatShapeError(f"dense: needs x [..., in] and W [out, in], got {x} and {w}")
    if x.shape[-1] != w.shape[1]:
        raise AcrobatShapeError(
            f"dense: input has {x.shape[-1]} features but the weight expects {w.shape[1]} "
            f"(x {list(x.shape)}, W {list(w.shape)})"
        )
    if b and b[0].shape != (w.shape[0],):
        raise AcrobatShapeError(f"dense: bias must be [{w.shape[0]}], got {list(b[0].shape)}")
    return TensorType(x.shape[:-1] + (w.shape[0],), _same_dtype([x, w, *b], "dense"))


@register(
    "matmul",
    2,
    OpKind.OPAQUE,
    np.matmul,
    doc="numpy matmul of 1-d / 2-d tensors",
    flops=product_flops,
)
def _matmul_rule(ts, attrs):
    a, b = _tensors(ts, "matmul")
    if not (1 <= len(a.shape) <= 2 and 1 <= len(b.shape) <= 2):
        raise AcrobatShapeError(f"matmul: needs 1-d or 2-d tensors, got {a} and {b}")
    k_a = a.shape[-1]
    k_b = b.shape[0]
    if k_a != k_b:
        raise AcrobatShapeError(
            f"matmul: inner dimensions differ ({list(a.shape)} @ {list(b.shape)})"
        )
    return TensorType(a.shape[:-1] + b.shape[1:], _same_dtype([a, b], "matmul"))


def _batch_matmul(a, b, transpose_b=False):
    return np.matmul(a, np.swapaxes(b, -1, -2) if transpose_b else b)


@register(
    "batch_matmul",
    2,
    OpKind.OPAQUE,
    _batch_matmul,
    {"transpose_b": False},
    doc="[G, M, K] @ [G, K, N] (or [G, N, K] with transpose_b): attention heads",
    flops=product_flops,
)
def _bmm_rule(ts, attrs):
    a, b = _tensors(ts, "batch_matmul")
    if len(a.shape) != 3 or len(b.shape) != 3:
        raise AcrobatShapeError(f"batch_matmul: needs two 3-d tensors, got {a} and {b}")
    g, m, k = a.shape
    bg, bk, n = (b.shape[0], b.shape[2], b.shape[1]) if attrs["transpose_b"] else b.shape
    if g != bg or k != bk:
        raise AcrobatShapeError(
            f"batch_matmul: shapes {list(a.shape)} and {list(b.shape)} do not agree"
            f"{' (transpose_b)' if attrs['transpose_b'] else ''}"
        )
    return TensorType((g, m, n), _same_dtype([a, b], "batch_matmul"))


def _embed(table, idx):
    if not 0 <= idx < table.shape[0]:
        from acrobat.errors import EvaluationError

        raise EvaluationError(
            f"embed: index {idx} is outside the table of {table.shape[0]} rows",
            hint="token ids must lie in [0, vocabulary size)",
        )
    return table[idx]


@register(
    "embed",
    2,
    OpKind.OPAQUE,
    _embed,
    doc="row `idx` (a host int) of the table E [V, H]",
    flops=no_flops,
)
def _embed_rule(ts, attrs):
    table = _tensor(ts[0], "the table of embed")
    if len(table.shape) != 2:
        raise AcrobatShapeError(f"embed: the table must be 2-d [V, H], got {table}")
    if ts[1] != INT:
        raise AcrobatTypeError(f"embed: the index must be a host int, got {ts[1]}")
    return TensorType(table.shape[1:], table.dtype)


# ----------------------------------------------------------------------------- data movement


def _concat(*xs, axis=0):
    return np.concatenate(xs, axis=axis)


@register(
    "concat",
    (1, None),
    OpKind.INJECTIVE,
    _concat,
    {"axis": 0},
    doc="concatenate along axis",
    flops=no_flops,
)
def _concat_rule(ts, attrs):
    xs = _tensors(ts, "concat")
    rank = len(xs[0].shape)
    if any(len(x.shape) != rank for x in xs) or rank == 0:
        raise AcrobatShapeError(
            f"concat: needs tensors of one rank >= 1, got {[str(x) for x in xs]}"
        )
    ax = _axis(attrs["axis"], rank, "concat")
    for x in xs:
        if x.shape[:ax] + x.shape[ax + 1 :] != xs[0].shape[:ax] + xs[0].shape[ax + 1 :]:
            raise AcrobatShapeError(
                f"concat: shapes {[list(x.shape) for x in xs]} differ outside axis {attrs['axis']}"
            )
    shape = list(xs[0].shape)
    shape[ax] = sum(x.shape[ax] for x in xs)
    return TensorType(tuple(shape), _same_dtype(xs, "concat"))


def _split(x, sections, axis=0):
    return tuple(np.split(x, sections, axis=axis))


@register(
    "split",
    1,
    OpKind.INJECTIVE,
    _split,
    {"sections": REQUIRED, "axis": 0},
    doc="n equal parts",
    flops=no_flops,
    positional=("sections", "axis"),
)
def _split_rule(ts, attrs):
    (x,) = _tensors(ts, "split")
    n = attrs["sections"]
    ax = _axis(attrs["axis"], len(x.shape), "split")
    if not isinstance(n, int) or n < 1 or not x.shape or x.shape[ax] % n:
        raise AcrobatShapeError(f"split: cannot split {x} into {n} equal parts along axis {ax}")
    part = list(x.shape)
    part[ax] //= n
    return TupleType(tuple(TensorType(tuple(part), x.dtype) for _ in range(n)))


def _slice(x, start, stop, axis=0):
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(start, stop)
    return x[tuple(idx)]


@register(
    "slice",
    1,
    OpKind.INJECTIVE,
    _slice,
    {"start": REQUIRED, "stop": REQUIRED, "axis": 0},
    doc="x[start:stop] along axis",
    flops=no_flops,
    positional=("start", "stop", "axis"),
)
def _slice_rule(ts, attrs):
    (x,) = _tensors(ts, "slice")
    ax = _axis(attrs["axis"], len(x.shape), "slice")
    start, stop = attrs["start"], attrs["stop"]
    if not x.shape or not (0 <= start < stop <= x.shape[ax]):
        raise AcrobatShapeError(f"slice: [{start}:{stop}] is not a non-empty range inside {x}")
    shape = list(x.shape)
    shape[ax] = stop - start
    return TensorType(tuple(shape), x.dtype)


def _reshape(x, shape):
    return np.reshape(x, shape)


@register(
    "reshape",
    1,
    OpKind.INJECTIVE,
    _reshape,
    {"shape": REQUIRED},
    doc="same data, new shape",
    flops=no_flops,
    positional=("shape",),
)
def _reshape_rule(ts, attrs):
    (x,) = _tensors(ts, "reshape")
    shape = list(_as_shape(attrs["shape"], "reshape"))
    if shape.count(-1) > 1 or any(d < -1 or d == 0 for d in shape):
        raise AcrobatShapeError(f"reshape: bad target shape {attrs['shape']}")
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if x.size % known:
            raise AcrobatShapeError(f"reshape: cannot reshape {x} to {attrs['shape']}")
        shape[shape.index(-1)] = x.size // known
    if math.prod(shape) != x.size:
        raise AcrobatShapeError(f"reshape: cannot reshape {x} ({x.size} elements) to {shape}")
    return TensorType(tuple(shape), x.dtype)


def _transpose(x, axes=None):
    return np.transpose(x, axes)


@register(
    "transpose",
    1,
    OpKind.INJECTIVE,
    _transpose,
    {"axes": None},
    doc="permute axes",
    flops=no_flops,
    positional=("axes",),
)
def _transpose_rule(ts, attrs):
    (x,) = _tensors(ts, "transpose")
    axes = attrs["axes"]
    if axes is None:
        return TensorType(tuple(reversed(x.shape)), x.dtype)
    if sorted(axes) != list(range(len(x.shape))):
        raise AcrobatShapeError(f"transpose: {axes} is not a permutation of the axes of {x}")
    return TensorType(tuple(x.shape[a] for a in axes), x.dtype)


# ----------------------------------------------------------------------------- reductions


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _same_shape_rule(name):
    def rule(ts, attrs):
        (x,) = _tensors(ts, name)
        _axis(attrs["axis"], len(x.shape), name)
        return x

    return rule


register(
    "softmax",
    1,
    OpKind.REDUCTION,
    _softmax,
    {"axis": -1},
    doc="softmax along axis",
    flops=per_element(5),
    positional=("axis",),
)(_same_shape_rule("softmax"))


def _layer_norm(x, gamma, beta, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


@register(
    "layer_norm",
    3,
    OpKind.REDUCTION,
    _layer_norm,
    {"eps": 1e-5},
    doc="normalise the last axis",
    flops=per_element(5),
)
def _layer_norm_rule(ts, attrs):
    x, g, b = _tensors(ts, "layer_norm")
    if not x.shape or g.shape != x.shape[-1:] or b.shape != x.shape[-1:]:
        raise AcrobatShapeError(
            f"layer_norm: gamma and beta must be [{x.shape[-1] if x.shape else '?'}], "
            f"got {g} and {b} for x {x}"
        )
    return x


def _reducer(fn):
    def impl(x, axis=None, keepdims=False):
        return np.asarray(fn(x, axis=axis, keepdims=keepdims), dtype=x.dtype)

    return impl


def _reduce_rule(name):
    def rule(ts, attrs):
        (x,) = _tensors(ts, name)
        axis, keep = attrs["axis"], attrs["keepdims"]
        if axis is None:
            return TensorType((1,) * len(x.shape) if keep else (), x.dtype)
        ax = _axis(axis, len(x.shape), name)
        shape = list(x.shape)
        if keep:
            shape[ax] = 1
        else:
            del shape[ax]
        return TensorType(tuple(shape), x.dtype)

    return rule


for _name, _fn in {"sum": np.sum, "mean": np.mean, "max": np.max}.items():
    register(
        _name,
        1,
        OpKind.REDUCTION,
        _reducer(_fn),
        {"axis": None, "keepdims": False},
        doc=_name,
        positional=("axis",),
    )(_reduce_rule(_name))


# ----------------------------------------------------------------------------- creation


def _filler(fn):
    def impl(shape):
        return fn(shape, dtype=np.float32)

    return impl


def _create_rule(name):
    def rule(ts, attrs):
        shape = _as_shape(attrs["shape"], name)
        if any(d < 1 for d in shape):
            raise AcrobatShapeError(f"{name}: dimensions must be positive, got {list(shape)}")
        return TensorType(shape, "float32")

    return rule


for _name, _fill in (("zeros", np.zeros), ("ones", np.ones)):
    register(
        _name,
        0,
        OpKind.CREATE,
        _filler(_fill),
        {"shape": REQUIRED},
        doc=_name,
        flops=no_flops,
        positional=("shape",),
    )(_create_rule(_name))


def _scalar(v):
    if type(v) is int and not -(1 << 63) <= v < 1 << 63:
        from acrobat.errors import EvaluationError

        raise EvaluationError(
            f"scalar: host int {v} does not fit in 64 bits",
            hint="host ints that scale tensors must lie in the int64 range",
        )
    return np.asarray(v, dtype=np.float32)


@register(
    "scalar",
    1,
    OpKind.CREATE,
    _scalar,
    doc="a host int or float as a 0-d float32 tensor (x * n with a host n uses it)",
)
def _scalar_rule(ts, attrs):
    if ts[0] not in (INT, FLOAT):
        raise AcrobatTypeError(f"scalar: needs a host int or float, got {ts[0]}")
    return TensorType((), "float32")


# ----------------------------------------------------------------------------- tensor -> host


def _item(x):
    if x.size != 1:
        from acrobat.errors import EvaluationError

        raise EvaluationError(f"item: tensor has {x.size} elements, not 1")
    return float(x.reshape(()))


@register("item", 1, OpKind.HOST_READ, _item, doc="the value of a one-element tensor, on the host")
def _item_rule(ts, attrs):
    (x,) = _tensors(ts, "item")
    if x.size != 1:
        raise AcrobatShapeError(f"item: needs a one-element tensor, got {x}")
    return FLOAT


def _argmax(x):
    return int(np.argmax(x))


@register("argmax", 1, OpKind.HOST_READ, _argmax, doc="index of the largest element, on the host")
def _argmax_rule(ts, attrs):
    (x,) = _tensors(ts, "argmax")
    if x.size == 0:
        raise AcrobatShapeError("argmax: empty tensor")
    return INT


# ----------------------------------------------------------------------------- host scalars


def _host_numeric(name):
    def rule(ts, attrs):
        for t in ts:
            if not isinstance(t, ScalarType) or t == BOOL and name not in ("h.eq", "h.ne"):
                raise AcrobatTypeError(f"{name[2:]}: needs host int/float operands, got {t}")
        if name in ("h.lt", "h.le", "h.gt", "h.ge", "h.eq", "h.ne"):
            return BOOL
        if name == "h.truediv" or FLOAT in ts:
            return FLOAT
        return INT

    return rule


def _host_bool(name):
    def rule(ts, attrs):
        for t in ts:
            if t != BOOL:
                raise AcrobatTypeError(f"{name[2:]}: needs host bool operands, got {t}")
        return BOOL

    return rule


NEGATIVE_INT_POWER = "negative exponent on a host int"
"""Start of the error an int to a negative int power raises on every path: the language
types ``int ** int`` as int, and ``2 ** -1`` is not one."""


def int_pow(a, b):
    """``a ** b`` on host numbers; an int to a negative int power is a ``ValueError``."""
    if b < 0 and isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        raise ValueError(
            f"{NEGATIVE_INT_POWER}: {a} ** {b} (for a float power write float(a) ** b)"
        )
    return a**b


_HOST_NUMERIC = {
    "h.add": lambda a, b: a + b,
    "h.sub": lambda a, b: a - b,
    "h.mul": lambda a, b: a * b,
    "h.truediv": lambda a, b: a / b,
    "h.floordiv": lambda a, b: a // b,
    "h.mod": lambda a, b: a % b,
    "h.pow": int_pow,
    "h.lt": lambda a, b: a < b,
    "h.le": lambda a, b: a <= b,
    "h.gt": lambda a, b: a > b,
    "h.ge": lambda a, b: a >= b,
    "h.eq": lambda a, b: a == b,
    "h.ne": lambda a, b: a != b,
}
for _name, _fn in _HOST_NUMERIC.items():
    register(_name, 2, OpKind.HOST, _fn, doc="host scalar " + _name[2:])(_host_numeric(_name))
register("h.neg", 1, OpKind.HOST, lambda a: -a, doc="host negation")(_host_numeric("h.neg"))
register("h.abs", 1, OpKind.HOST, abs, doc="host absolute value")(_host_numeric("h.abs"))


def _host_extremum(pick):
    def impl(a, b):
        # Python's max(3, 2.0) is the int 3; the type rule says float, so say float too
        r = pick(a, b)
        return float(r) if type(a) is float or type(b) is float else r

    return impl


register("h.min", 2, OpKind.HOST, _host_extremum(min), doc="host minimum of two numbers")(
    _host_numeric("h.min")
)
register("h.max", 2, OpKind.HOST, _host_extremum(max), doc="host maximum of two numbers")(
    _host_numeric("h.max")
)


def _list_length(xs):
    n = 0
    while xs.ctor == "Cons":
        n, xs = n + 1, xs.fields[1]
    return n


@register("h.len", 1, OpKind.HOST, _list_length, doc="number of elements of a List, on the host")
def _len_rule(ts, attrs):
    (t,) = ts
    if not (isinstance(t, AdtType) and t.name == "List"):
        raise AcrobatTypeError(
            f"len: needs a List, got {t}",
            hint="len(xs) counts the elements of a List[T]; tensor sizes are static",
        )
    return INT


def list_items(xs) -> list:
    """The elements of a List value (its Cons cells walked), in order."""
    items = []
    while xs.ctor == "Cons":
        items.append(xs.fields[0])
        xs = xs.fields[1]
    return items


def list_item(xs, k):
    """``xs[k]`` of a List (a negative ``k`` counts from the end, as Python's); out of
    range is a ``ValueError`` naming the index and the length."""
    items = list_items(xs)
    if not -len(items) <= k < len(items):
        raise ValueError(f"{LIST_INDEX_ERROR}: {k} for a list of {len(items)}")
    return items[k]


LIST_INDEX_ERROR = "list index out of range"
"""Start of the error ``xs[k]`` raises out of range, on every path."""


@register("h.nth", 2, OpKind.HOST, list_item, doc="element k of a List, on the host (xs[k])")
def _nth_rule(ts, attrs):
    t, k = ts
    if not (isinstance(t, AdtType) and t.name == "List"):
        raise AcrobatTypeError(f"xs[k]: needs a List, got {t}")
    if k != INT:
        raise AcrobatTypeError(f"xs[k]: the index must be a host int, got {k}")
    return t.args[0]


def _conversion(name, result):
    def rule(ts, attrs):
        (t,) = ts
        if not isinstance(t, ScalarType):
            raise AcrobatTypeError(f"{name}: needs a host int, float or bool, got {t}")
        return result

    return rule


register("h.int", 1, OpKind.HOST, int, doc="int(a): a host number truncated toward zero")(
    _conversion("int", INT)
)
register("h.float", 1, OpKind.HOST, float, doc="float(a): a host number as a float")(
    _conversion("float", FLOAT)
)


register("h.and", 2, OpKind.HOST, lambda a, b: a and b, doc="host and")(_host_bool("h.and"))
register("h.or", 2, OpKind.HOST, lambda a, b: a or b, doc="host or")(_host_bool("h.or"))
register("h.not", 1, OpKind.HOST, lambda a: not a, doc="host not")(_host_bool("h.not"))


# ----------------------------------------------------------------------------- ghost


@register(
    "ghost",
    0,
    OpKind.GHOST,
    lambda count=1: (),
    {"count": 1},
    doc="a depth-only no-op",
    flops=no_flops,
)
def _ghost_rule(ts, attrs):
    """Ghost operators (docs/paper.md §6) only advance the dynamic depth."""
    n = attrs["count"]
    if not isinstance(n, int) or n < 1:
        raise AcrobatTypeError(f"ghost: count must be a positive int, got {n!r}")
    return TupleType(())


def resolve_attrs(op: Op, given: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled in; unknown or missing attributes raise a typed error."""
    unknown = set(given) - set(op.attrs)
    if unknown:
        raise AcrobatTypeError(
            f"{op.name}: unknown attribute(s) {sorted(unknown)}",
            hint=f"{op.name} takes {sorted(op.attrs) or 'no attributes'}",
        )
    out = {}
    for k, default in op.attrs.items():
        if k in given:
            out[k] = given[k]
        elif default is REQUIRED:
            raise AcrobatTypeError(f"{op.name}: attribute {k!r} is required")
        else:
            out[k] = default
    return out


def infer_op(name: str, arg_types: list[Type], attrs: dict[str, Any]) -> Type:
    """Result type of ``name(*args, **attrs)``; raises a typed error naming what is wrong."""
    op = REGISTRY.get(name)
    if op is None:
        raise AcrobatTypeError(f"unknown op {name!r}")
    n = len(arg_types)
    if n < op.min_arity or (op.max_arity is not None and n > op.max_arity):
        want = (
            str(op.min_arity)
            if op.min_arity == op.max_arity
            else f"{op.min_arity}..{op.max_arity if op.max_arity is not None else 'n'}"
        )
        raise AcrobatTypeError(f"{name} takes {want} argument(s), got {n}")
    return op.shape_rule(arg_types, resolve_attrs(op, attrs))


# the list reductions register themselves in REGISTRY (their own module: they need list_items)
from acrobat.ir import list_ops as _list_ops  # noqa: E402, F401
