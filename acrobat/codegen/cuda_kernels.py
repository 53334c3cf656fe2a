"""CUDA C for a kernel: the GPU twin of :mod:`acrobat.codegen.numpy_kernels`.

A kernel's body is per instance; on the GPU it runs as a short *plan* of steps, each one
for the whole batch (docs/paper.md §9-§11):

* ``Launch`` (elementwise): ONE generated ``extern "C" __global__`` function computes
  every element of a set of values. Elementwise and broadcasting ops become C
  expressions; data movement (reshape/slice/split/transpose/concat, and ``embed``, a
  gather by a host id) becomes index arithmetic, so a whole chain is one pass over
  memory. Every batched input is read THROUGH its index
  array straight from its arena buffer (gather fusion: ``p0_x[i0_x[b] * 8 + i]``, no
  gather copy); the outputs are written to a contiguous ``[B, ...]`` block.
* ``Launch`` (reduction): softmax/layer_norm/sum/mean/max, one thread block per output
  row; the input's elementwise producers are inlined into its
  loads, so e.g. ``layer_norm(add(x, y))`` reads ``x`` and ``y`` through their indices.
* ``Gemm``: dense/matmul/batch_matmul go to cuBLAS (``xp.matmul``) on a gathered or
  already-contiguous operand, with the weight shared (dense weights pre-transposed).
  A dense bias becomes a broadcast ``add``, fused into whatever reads the product.

How each op is lowered is its rule in :data:`CUDA_RULES` (a table keyed by op name, like
tinygrad's renderer tables): a :class:`CudaRule` says whether the op is fused into
launches (and how to compute one element), is a cuBLAS product, or is a reduction (and
its per-row body). An op that reaches a kernel without a rule is a
:class:`~acrobat.errors.MissingLoweringError` naming it, raised when the plan is made.

The pattern: walk the bindings in order. A fusible op emits nothing, it only describes a
value. A ``Gemm`` needs its operands in memory, so the fusible ones are materialized by
one elementwise launch just before it; the kernel's outputs by a last launch. Fusible
values are recomputed from their *leaves* wherever they are read (params, weights,
constants and the outputs of earlier steps, all live for the whole kernel). Why it is
correct: bindings are in topological order, so every leaf a step reads was produced by
an earlier step. Everything here is string building: no CuPy and no GPU needed.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from acrobat.codegen import missing_rule
from acrobat.errors import AcrobatTypeError
from acrobat.ir.nodes import Const, Function, Let, OpCall, ParamRef, Proj, TupleExpr, Var
from acrobat.ir.types import FLOAT, ScalarType, TensorType

PARAM, HOST, WEIGHT, CONST = "param", "host", "weight", "const"  # leaf kinds of a Node
# The per-row body of each reduction. X(k): element k of the row being reduced;
# Y(k): where output element k goes; R: the row length; acr_sh: shared scratch.
_LOOP = "for (long long k = threadIdx.x; k < R; k += blockDim.x)"
_REDUCE_BODY = {
    "softmax": f"""float m = ACR_NEG_INF;
{_LOOP} m = fmaxf(m, X(k));
m = acr_block_max(m, acr_sh);
float s = 0.0f;
{_LOOP} s += expf(X(k) - m);
s = acr_block_sum(s, acr_sh);
{_LOOP} Y(k) = expf(X(k) - m) / s;""",
    "layer_norm": f"""float mu = 0.0f;
{_LOOP} mu += X(k);
mu = acr_block_sum(mu, acr_sh) / (float)R;
float var = 0.0f;
{_LOOP} {{ const float d = X(k) - mu; var += d * d; }}
var = acr_block_sum(var, acr_sh) / (float)R;
const float sd = sqrtf(var + EPS);
{_LOOP} Y(k) = (X(k) - mu) / sd * GAMMA(k) + BETA(k);""",
    "sum": f"""float s = 0.0f;
{_LOOP} s += X(k);
s = acr_block_sum(s, acr_sh);
if (threadIdx.x == 0) Y(0) = s;""",
    "mean": f"""float s = 0.0f;
{_LOOP} s += X(k);
s = acr_block_sum(s, acr_sh);
if (threadIdx.x == 0) Y(0) = s / (float)R;""",
    "max": f"""float m = ACR_NEG_INF;
{_LOOP} m = fmaxf(m, X(k));
m = acr_block_max(m, acr_sh);
if (threadIdx.x == 0) Y(0) = m;""",
}

REDUCE_BLOCK = 256  # the most threads a reduction block may have (size of acr_sh)

PRELUDE = f"""#ifndef ACROBAT_CUDA_PRELUDE
#define ACROBAT_CUDA_PRELUDE
#define ACR_NEG_INF __int_as_float((int)0xff800000u)
__device__ __forceinline__ float acr_sigmoid(float x) {{ return 1.0f / (1.0f + expf(-x)); }}
__device__ __forceinline__ float acr_gelu(float x) {{
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}}
// Block reductions for a power-of-two blockDim.x <= {REDUCE_BLOCK} (any, down to 1).
__device__ __forceinline__ float acr_block_sum(float v, float* sh) {{
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x >> 1; s > 0; s >>= 1) {{
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }}
  const float r = sh[0];
  __syncthreads();
  return r;
}}
__device__ __forceinline__ float acr_block_max(float v, float* sh) {{
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x >> 1; s > 0; s >>= 1) {{
    if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }}
  const float r = sh[0];
  __syncthreads();
  return r;
}}
#endif
"""


# ----------------------------------------------------------------------------- index maths


def _atom(e: str) -> str:
    """``e`` parenthesized unless it is a name, a number or already one group."""
    if re.fullmatch(r"[A-Za-z0-9_]+", e):
        return e
    depth = 0
    for n, ch in enumerate(e):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and n < len(e) - 1:
            return f"({e})"
    return e if e.startswith("(") else f"({e})"


def unravel(idx: str, shape: tuple[int, ...]) -> list[str]:
    """C expressions of the coordinates of flat index ``idx`` in ``shape``."""
    idx = _atom(idx)
    coords, stride = [], math.prod(shape)
    for axis, dim in enumerate(shape):
        stride //= dim
        c = idx if stride == 1 else f"({idx} / {stride})"
        coords.append("0" if dim == 1 else c if axis == 0 else f"({c} % {dim})")
    return coords


def ravel(coords: list[str], shape: tuple[int, ...]) -> str:
    """The flat index of ``coords`` in ``shape`` as a C expression."""
    terms, stride = [], 1
    for c, dim in zip(reversed(coords), reversed(shape)):
        if c != "0":
            terms.append(c if stride == 1 else f"{c} * {stride}")
        stride *= dim
    return "0" if not terms else terms[0] if len(terms) == 1 else f"({' + '.join(terms)})"


def shift(c: str, k: int) -> str:
    return c if k == 0 else f"({c} + {k})" if k > 0 else f"({c} - {-k})"


def _broadcast_index(idx: str, out: tuple[int, ...], arg: tuple[int, ...]) -> str:
    """Where element ``idx`` of a broadcast result reads operand shape ``arg``."""
    if arg == out:
        return idx
    if math.prod(arg) == 1:
        return "0"
    coords = unravel(idx, out)[len(out) - len(arg) :]
    return ravel([c if d != 1 else "0" for c, d in zip(coords, arg)], arg)


def _slice_index(idx, out, arg, attrs):
    coords = unravel(idx, out)
    ax = attrs.get("axis", 0) % len(arg)
    coords[ax] = shift(coords[ax], attrs["start"])
    return ravel(coords, arg)


def _transpose_index(idx, out, arg, attrs):
    axes = attrs.get("axes") or tuple(reversed(range(len(arg))))
    coords = unravel(idx, out)
    src = ["0"] * len(arg)
    for i, a in enumerate(axes):
        src[a] = coords[i]
    return ravel(src, arg)


# ----------------------------------------------------------------------------- the value graph


@dataclass(frozen=True)
class Node:
    """A value of the kernel body once aliases, tuples and projections are resolved."""

    op: str  # an op name, or a leaf kind: PARAM, HOST, WEIGHT, CONST
    args: tuple[str, ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] = ()
    batched: bool = False
    value: float = 0.0


class _Graph:
    """Nodes keyed ``%var``, ``$weight`` or ``!synthetic``; ``order`` lists op nodes."""

    def __init__(self, f: Function):
        self.kernel = f.name
        self.nodes: dict[str, Node] = {}
        self.order: list[str] = []
        self.alias: dict[str, str] = {}
        self.tuples: dict[str, list[str]] = {}
        self.params: list[tuple[str, str, tuple[int, ...]]] = []
        self.id_limits: dict[str, int] = {}  # host param -> rows of the tables it indexes
        self.bad_ids: list[tuple[int, int]] = []  # constant ids outside their table, rows
        for p in f.params:
            host = isinstance(p.ty, ScalarType)
            shape = () if host else self.check(p.ty).shape
            # a host float is recorded as the bits of a float64 (see codegen.host)
            attrs = {"float": p.ty == FLOAT} if host else {}
            self.nodes["%" + p.name] = Node(
                HOST if host else PARAM, attrs=attrs, shape=shape, batched=True
            )
            self.params.append(("%" + p.name, "host" if host else "batched", shape))
        body = f.body
        for b in body.bindings if isinstance(body, Let) else ():
            self.bind(b.var, b.value)
        result = body.body if isinstance(body, Let) else body
        self.outputs = self.refs(result)

    def check(self, ty) -> TensorType:
        if not isinstance(ty, TensorType) or ty.dtype != "float32":
            raise AcrobatTypeError(
                f"kernel {self.kernel}: the CUDA backend handles float32 tensors only, got {ty}",
                hint="use backend='numpy' for this program",
            )
        return ty

    def add(self, key: str, node: Node) -> str:
        self.nodes[key] = node
        if node.op not in (PARAM, HOST, WEIGHT, CONST):
            self.order.append(key)
        return key

    def ref(self, e) -> str:
        if isinstance(e, Var):
            return self.alias.get(e.name, "%" + e.name)
        if isinstance(e, ParamRef):
            shape = self.check(e.ty).shape
            return self.add("$" + e.name, Node(WEIGHT, shape=shape))
        if isinstance(e, Const):
            return self.add(f"!c{float(e.value)!r}", Node(CONST, value=float(e.value)))
        raise NotImplementedError(f"kernel {self.kernel}: no CUDA rule for {type(e).__name__}")

    def refs(self, e) -> list[str]:
        if isinstance(e, TupleExpr):
            return [self.ref(x) for x in e.fields]
        if isinstance(e, Var) and e.name in self.tuples:
            return list(self.tuples[e.name])
        return [self.ref(e)]

    def bind(self, var: Var, e) -> None:
        if isinstance(e, TupleExpr) or (isinstance(e, Var) and e.name in self.tuples):
            self.tuples[var.name] = self.refs(e)
        elif isinstance(e, Var | ParamRef | Const):
            self.alias[var.name] = self.ref(e)
        elif isinstance(e, Proj) and isinstance(e.tup, Var) and e.tup.name in self.tuples:
            self.alias[var.name] = self.tuples[e.tup.name][e.index]
        elif isinstance(e, OpCall):
            self.op(var, e)
        else:
            raise NotImplementedError(f"kernel {self.kernel}: no CUDA rule for {e!r}")

    def op(self, var: Var, e: OpCall) -> None:
        rule = CUDA_RULES.get(e.op)
        if rule is None:
            raise missing_rule(e.op, "CUDA", self.kernel)
        args = tuple(self.ref(a) for a in e.args)
        batched = any(self.nodes[a].batched for a in args)
        (rule.graph or _one_node)(self, var, e, args, batched)


# ----------------------------------------------------------------------------- plan steps


@dataclass(frozen=True)
class Launch:
    """One generated CUDA function and how to call it.

    The C signature is ``(long long B, float* out..., inputs...)`` where each input is
    ``(kind, key)``: a ``param`` passes two pointers (its arena buffer and its index
    array), ``temp``/``weight`` one float pointer, ``host`` one ``long long`` pointer."""

    name: str
    kind: str  # "elementwise" or "reduction"
    source: str
    outputs: tuple[tuple[str, tuple[int, ...]], ...]
    inputs: tuple[tuple[str, str], ...]
    work: int  # elements (elementwise) or reduction rows (reduction) per instance
    reduce_len: int = 0


@dataclass(frozen=True)
class Gemm:
    """A cuBLAS product ``out = a @ b`` (``dense``: ``b`` is a weight, used transposed)."""

    out: str
    op: str
    a: str
    b: str
    a_rank: int
    b_rank: int
    a_batched: bool
    b_batched: bool
    shape: tuple[int, ...]
    transpose_b: bool = False

    @property
    def batched(self) -> bool:
        return self.a_batched or self.b_batched


@dataclass(frozen=True)
class CudaPlan:
    """A kernel as GPU steps: params ``(key, mode, shape)``, steps, outputs ``(key, shape)``;
    ``id_limits``: host params used as embedding ids, with the number of table rows;
    ``bad_ids``: constant embedding ids outside their table (id, rows): every run fails."""

    kernel: str
    params: tuple[tuple[str, str, tuple[int, ...]], ...]
    steps: tuple[Launch | Gemm, ...]
    outputs: tuple[tuple[str, tuple[int, ...]], ...]
    id_limits: tuple[tuple[str, int], ...] = ()
    bad_ids: tuple[tuple[int, int], ...] = ()

    @property
    def launches(self) -> tuple[Launch, ...]:
        return tuple(s for s in self.steps if isinstance(s, Launch))

    def describe(self) -> str:
        """The plan as readable lines (kept beside the CUDA source)."""
        lines = [f"// CUDA plan of kernel {self.kernel}: {len(self.steps)} step(s)"]
        for n, s in enumerate(self.steps, 1):
            if isinstance(s, Gemm):
                b = f"{s.b}^T" if s.op == "dense" or s.transpose_b else s.b
                lines.append(f"//   {n}. cuBLAS {s.op}: {s.out} = {s.a} @ {b}")
            else:
                ins = ", ".join(k + (" (via index)" if m == PARAM else "") for m, k in s.inputs)
                outs = ", ".join(k for k, _ in s.outputs)
                lines.append(f"//   {n}. launch {s.name} ({s.kind}): {outs} <- {ins or '-'}")
        lines.append(f"//   outputs: {', '.join(k for k, _ in self.outputs)}")
        return "\n".join(lines) + "\n"

    @property
    def source(self) -> str:
        """The readable plan, then the source of every RawKernel of the kernel."""
        return "\n".join([self.describe(), PRELUDE, *(s.source for s in self.launches)])


# ----------------------------------------------------------------------------- emitting C


def _literal(v: float) -> str:
    if math.isnan(v):
        return "__int_as_float(0x7fc00000)"
    if math.isinf(v):
        return "(-ACR_NEG_INF)" if v > 0 else "ACR_NEG_INF"
    return f"{v!r}f" if math.copysign(1.0, v) > 0 else f"({v!r}f)"  # never "--0.5f"


def _cname(prefix: str, n: int, key: str) -> str:
    return f"{prefix}{n}_{re.sub(r'[^A-Za-z0-9_]', '_', key.lstrip('%$!'))[:24]}"


class _Emitter:
    """C statements that compute elements of fusible values, with reuse of equal loads."""

    def __init__(self, g: _Graph, temps: dict[str, bool]):
        self.g, self.temps = g, temps
        self.inputs: dict[tuple[str, str], list[str]] = {}
        self.lines: list[str] = []
        self.scopes: list[dict[tuple[str, str], str]] = [{}]
        self.n = 0

    def arg(self, kind: str, key: str) -> list[str]:
        """The C parameter name(s) of an input, declared on first use."""
        if (kind, key) not in self.inputs:
            n = len(self.inputs)
            names = [_cname("p", n, key), _cname("i", n, key)] if kind == PARAM else []
            self.inputs[(kind, key)] = names or [_cname(kind[0], n, key)]
        return self.inputs[(kind, key)]

    def local(self, code: str) -> str:
        self.n += 1
        self.lines.append(f"const float v{self.n} = {code};")
        return f"v{self.n}"

    def block(self, key: str, idx: str) -> tuple[list[str], str]:
        """Statements (in a fresh scope) computing element ``idx`` of ``key``."""
        saved, self.lines = self.lines, []
        self.scopes.append({})
        v = self.load(key, idx)
        lines, self.lines = self.lines, saved
        self.scopes.pop()
        return lines, v

    def load(self, key: str, idx: str) -> str:
        """A C value holding element ``idx`` (of instance ``b``) of value ``key``."""
        for scope in reversed(self.scopes):
            if (key, idx) in scope:
                return scope[(key, idx)]
        node = self.g.nodes[key]
        width = math.prod(node.shape)
        if key in self.temps:
            row = f"b * {width} + " if self.temps[key] else ""
            code = f"{self.arg('temp', key)[0]}[{row}{idx}]"
        elif node.op == PARAM:
            p, i = self.arg(PARAM, key)
            code = f"{p}[{i}[b] * {width} + {idx}]"
        elif node.op == WEIGHT:
            code = f"{self.arg(WEIGHT, key)[0]}[{idx}]"
        elif node.op == CONST:
            return _literal(node.value)
        else:  # an op computed here: every op node in the graph has a rule
            rule = CUDA_RULES[node.op]
            if rule.load is None:
                raise NotImplementedError(f"kernel {self.g.kernel}: {node.op} is not fused")
            self.scopes[-1][(key, idx)] = v = rule.load(self, node, idx)
            return v
        self.scopes[-1][(key, idx)] = v = self.local(code)
        return v

    def concat(self, node: Node, idx: str) -> str:
        """``if``/``else`` on the coordinate along the axis: only one operand is read."""
        self.n += 1
        out = f"v{self.n}"
        self.lines.append(f"float {out};")
        ax = node.attrs.get("axis", 0) % len(node.shape)
        coords = unravel(idx, node.shape)
        off = 0
        for k, a in enumerate(node.args):
            shape = self.g.nodes[a].shape
            test = f"if ({coords[ax]} < {off + shape[ax]}) {{"
            head = test if k == 0 else "} else {" if k == len(node.args) - 1 else "} else " + test
            sub = list(coords)
            sub[ax] = shift(coords[ax], -off)
            lines, v = self.block(a, ravel(sub, shape))
            self.lines += [head, *_indent(lines, 2), f"  {out} = {v};"]
            off += shape[ax]
        self.lines.append("}")
        return out

    def signature(self, name: str, outputs: list[str]) -> str:
        params = ["const long long B"] + [f"float* __restrict__ {o}" for o in outputs]
        for (kind, _), names in self.inputs.items():
            if kind == PARAM:
                params += [f"const float* __restrict__ {names[0]}"]
                params += [f"const long long* __restrict__ {names[1]}"]
            elif kind == HOST:
                params.append(f"const long long* __restrict__ {names[0]}")
            else:
                params.append(f"const float* __restrict__ {names[0]}")
        return f'extern "C" __global__ void {name}(\n    ' + ",\n    ".join(params) + ") {"


def _indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + line for line in lines]


def _elementwise(g: _Graph, name: str, keys: list[str], temps: dict[str, bool]) -> Launch:
    """One launch writing every element of ``keys``; outputs of one width share a thread."""
    e = _Emitter(g, temps)
    groups: dict[int, list[int]] = {}
    for j, key in enumerate(keys):
        groups.setdefault(math.prod(g.nodes[key].shape), []).append(j)
    outs = [_cname("o", j, key) for j, key in enumerate(keys)]
    total = sum(groups)
    body, off = [], 0
    for n, (width, js) in enumerate(groups.items()):
        e.scopes.append({})
        e.lines = []
        for j in js:
            v = e.load(keys[j], "i")
            e.lines.append(f"{outs[j]}[b * {width} + i] = {v};")
        e.scopes.pop()
        inner = [f"const long long i = {shift('j', -off)};", *e.lines]
        if len(groups) == 1:
            body += inner
        else:
            test = f"if (j < {off + width})" if n < len(groups) - 1 else ""
            head = ("} else " if n else "") + (test + " {" if test else "{")
            body += [head, *_indent(inner, 2)]
        off += width
    if len(groups) > 1:
        body.append("}")
    src = [
        e.signature(name, outs),
        f"  // computes {', '.join(keys)}",
        "  for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
        f"       g < B * {total}; g += (long long)gridDim.x * blockDim.x) {{",
        f"    const long long b = g / {total};",
        f"    const long long j = g % {total};",
        *_indent(body, 4),
        "  }",
        "}",
    ]
    return Launch(
        name,
        "elementwise",
        PRELUDE + "\n" + "\n".join(src) + "\n",
        tuple((k, g.nodes[k].shape) for k in keys),
        tuple(e.inputs),
        total,
    )


def _reduction(g: _Graph, name: str, key: str, temps: dict[str, bool]) -> Launch:
    """One block per row of the reduced axis, the rule's ``body`` as the row body."""
    node = g.nodes[key]
    rule = CUDA_RULES[node.op]
    x = g.nodes[node.args[0]].shape
    axis = node.attrs.get("axis", rule.default_axis)
    if axis is None or not x:
        outer, length, inner = 1, math.prod(x), 1
    else:
        ax = axis % len(x)
        outer, length, inner = math.prod(x[:ax]), x[ax], math.prod(x[ax + 1 :])
    rows, width = outer * inner, math.prod(node.shape)
    e = _Emitter(g, temps)
    at = "base + k" if inner == 1 else f"base + k * {inner}"
    out = _cname("o", 0, key)
    same_shape = rule.keeps_shape
    row = "r" if rows > 1 else "0"
    y = f"{out}[b * {width} + {at}]" if same_shape else f"{out}[b * {width} + {row}]"
    # X(k): element k of the row; further operands (layer_norm's GAMMA, BETA) by k alone
    lambdas = [("X", node.args[0], at)]
    lambdas += [(name, a, "k") for name, a in zip(rule.operands, node.args[1:])]
    body = []
    for lam, arg, idx in lambdas:
        lines, v = e.block(arg, idx)
        body += [f"auto {lam} = [&](long long k) -> float {{", *_indent(lines, 2)]
        body += [f"  return {v};", "};"]
    body += [f"auto Y = [&](long long{' k' if same_shape else ''}) -> float& {{ return {y}; }};"]
    if rule.consts is not None:
        body += rule.consts(node.attrs)
    body += rule.body.splitlines()
    where = ["const long long b = row;", "const long long base = 0;"]
    if rows > 1:
        base = "r * R" if inner == 1 else f"(r / {inner}) * R * {inner} + r % {inner}"
        where = [f"const long long b = row / {rows};", f"const long long r = row % {rows};"]
        where.append(f"const long long base = {base};")
    # declare only what is read (nvcc warns on an unreferenced local): a row that reads
    # a constant or a broadcast scalar never uses ``base``, and then maybe not ``r``
    for n in reversed(range(1, len(where))):  # ``b`` is always read (by Y)
        local = where[n].split()[3]  # "const long long LOCAL = ..."
        if not re.search(rf"\b{local}\b", "\n".join(where[n + 1 :] + body)):
            del where[n]
    src = [
        e.signature(name, [out]),
        f"  // {key} = {node.op}({', '.join(node.args)})",
        f"  __shared__ float acr_sh[{REDUCE_BLOCK}];",
        f"  const long long R = {length};",
        f"  for (long long row = blockIdx.x; row < B * {rows}; row += gridDim.x) {{",
        *_indent(where, 4),
        *_indent(body, 4),
        "  }",
        "}",
    ]
    return Launch(
        name,
        "reduction",
        PRELUDE + "\n" + "\n".join(src) + "\n",
        ((key, node.shape),),
        tuple(e.inputs),
        rows,
        length,
    )


# ----------------------------------------------------------------------------- the rules


class Lowering(StrEnum):
    """Where an op's work happens on the GPU."""

    FUSED = "fused"  # element by element, inside whatever launch reads it
    GEMM = "gemm"  # a cuBLAS product step (its operands in memory)
    REDUCTION = "reduction"  # its own launch, one block per row


GraphRule = Callable[["_Graph", Var, OpCall, tuple[str, ...], bool], None]
LoadRule = Callable[["_Emitter", Node, str], str]


@dataclass(frozen=True)
class CudaRule:
    """How one op is lowered to CUDA.

    ``graph(g, var, e, args, batched)``: how a binding of the op enters the value graph
    (default: one node of the same op); ``args`` are the operand keys. ``FUSED`` ops have
    ``load(emitter, node, idx)``: the C value of element ``idx`` (declare new values with
    ``emitter.local``, read operands with ``emitter.load``). ``REDUCTION`` ops have
    ``body`` (the per-row code, see :data:`_REDUCE_BODY`), the default ``axis`` when the
    op has none (None: all axes), ``keeps_shape`` (the result has the input's shape),
    the lambda names of operands after the first (``operands``) and ``consts(attrs)``:
    C declarations of attribute values the body reads."""

    lowering: Lowering
    load: LoadRule | None = None
    graph: GraphRule | None = None
    body: str = ""
    default_axis: int | None = None
    keeps_shape: bool = False
    operands: tuple[str, ...] = ()
    consts: Callable[[dict[str, Any]], list[str]] | None = None


CUDA_RULES: dict[str, CudaRule] = {}
"""Op name -> its CUDA rule: one per op of a kind that runs in kernels."""


def _one_node(g: _Graph, var: Var, e: OpCall, args: tuple[str, ...], batched: bool) -> None:
    """The default graph rule: one node of the op."""
    g.add("%" + var.name, Node(e.op, args, dict(e.attrs), g.check(e.ty).shape, batched))


def cuda_elementwise(name: str, template: str) -> None:
    """The rule of an elementwise or broadcasting op from a C expression template:
    ``{0}``, ``{1}``: the operands' values at the same element (broadcast as NumPy does)."""

    def load(em: _Emitter, node: Node, idx: str) -> str:
        ops = [
            em.load(a, _broadcast_index(idx, node.shape, em.g.nodes[a].shape)) for a in node.args
        ]
        return em.local(template.format(*ops))

    CUDA_RULES[name] = CudaRule(Lowering.FUSED, load=load)


for _name, _template in {
    "sigmoid": "acr_sigmoid({0})",
    "tanh": "tanhf({0})",
    "relu": "fmaxf({0}, 0.0f)",
    "gelu": "acr_gelu({0})",
    "exp": "expf({0})",
    "log": "logf({0})",
    "sqrt": "sqrtf({0})",
    "neg": "(-{0})",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "maximum": "fmaxf({0}, {1})",
    "minimum": "fminf({0}, {1})",
}.items():
    cuda_elementwise(_name, _template)


def _index_rule(where: Callable[[str, tuple[int, ...], tuple[int, ...], dict], str]) -> CudaRule:
    """A data-movement op: ``where(idx, result shape, operand shape, attrs)`` is the
    flat index of the operand element that element ``idx`` of the result reads."""

    def load(em: _Emitter, node: Node, idx: str) -> str:
        arg = em.g.nodes[node.args[0]].shape
        return em.load(node.args[0], where(idx, node.shape, arg, node.attrs))

    return CudaRule(Lowering.FUSED, load=load)


def _split_graph(g: _Graph, var: Var, e: OpCall, args: tuple[str, ...], batched: bool) -> None:
    """``split`` is a tuple of ``slice`` nodes."""
    attrs = dict(e.attrs)
    x = g.nodes[args[0]]
    ax = attrs.get("axis", 0) % len(x.shape)
    part = x.shape[ax] // attrs["sections"]
    shape = x.shape[:ax] + (part,) + x.shape[ax + 1 :]
    g.tuples[var.name] = [
        g.add(
            f"!%{var.name}.{k}",
            Node(
                "slice",
                args,
                {"axis": ax, "start": k * part, "stop": (k + 1) * part},
                shape,
                batched,
            ),
        )
        for k in range(attrs["sections"])
    ]


CUDA_RULES["reshape"] = _index_rule(lambda idx, out, arg, attrs: idx)
CUDA_RULES["slice"] = _index_rule(_slice_index)
CUDA_RULES["transpose"] = _index_rule(_transpose_index)
CUDA_RULES["split"] = CudaRule(Lowering.FUSED, graph=_split_graph)  # becomes slices


def _concat_load(em: _Emitter, node: Node, idx: str) -> str:
    return em.load(node.args[0], idx) if len(node.args) == 1 else em.concat(node, idx)


CUDA_RULES["concat"] = CudaRule(Lowering.FUSED, load=_concat_load)


def _fill_graph(g: _Graph, var: Var, e: OpCall, args: tuple[str, ...], batched: bool) -> None:
    """``zeros``/``ones``: one value for every instance (never batched)."""
    g.add("%" + var.name, Node(e.op, args, dict(e.attrs), g.check(e.ty).shape, False))


for _name, _value in (("zeros", "0.0f"), ("ones", "1.0f")):
    CUDA_RULES[_name] = CudaRule(
        Lowering.FUSED, load=lambda em, node, idx, v=_value: v, graph=_fill_graph
    )


def _scalar_load(em: _Emitter, node: Node, idx: str) -> str:
    src = em.g.nodes[node.args[0]]
    if src.op != HOST:
        return em.load(node.args[0], "0")
    h = f"{em.arg(HOST, node.args[0])[0]}[b]"
    # a host float is recorded as the bits of a float64 (see codegen.host)
    return em.local(
        f"(float)__longlong_as_double({h})" if src.attrs.get("float") else f"(float){h}"
    )


CUDA_RULES["scalar"] = CudaRule(Lowering.FUSED, load=_scalar_load)


def _embed_graph(g: _Graph, var: Var, e: OpCall, args: tuple[str, ...], batched: bool) -> None:
    """Record the ids' bounds: constant ids are checked now, host ids at run time."""
    shape = g.check(e.ty).shape
    rows, ids = g.nodes[args[0]].shape[0], g.nodes[args[1]]
    if ids.op == CONST and not 0 <= int(ids.value) < rows:
        g.bad_ids.append((int(ids.value), rows))
    elif ids.op != CONST:
        g.id_limits[args[1]] = min(rows, g.id_limits.get(args[1], rows))
    g.add("%" + var.name, Node(e.op, args, dict(e.attrs), shape, batched))


def _embed_load(em: _Emitter, node: Node, idx: str) -> str:
    """A gather by host id: row ``id[b]`` of the table, read in place."""
    table, ids = node.args
    width = math.prod(node.shape)
    if em.g.nodes[ids].op == CONST:  # the same row for every instance
        return em.load(table, shift(idx, int(em.g.nodes[ids].value) * width))
    return em.load(table, f"{em.arg(HOST, ids)[0]}[b] * {width} + {idx}")


CUDA_RULES["embed"] = CudaRule(Lowering.FUSED, load=_embed_load, graph=_embed_graph)


def _dense_graph(g: _Graph, var: Var, e: OpCall, args: tuple[str, ...], batched: bool) -> None:
    """The product is a GEMM; a bias becomes a broadcast ``add`` node, fused into whatever
    reads the result."""
    if len(args) < 3:
        return _one_node(g, var, e, args, batched)
    shape, key = g.check(e.ty).shape, "%" + var.name
    mm = g.add("!mm" + key, Node("dense", args[:2], {}, shape, batched))
    g.add(key, Node("add", (mm, args[2]), {}, shape, batched))


CUDA_RULES["dense"] = CudaRule(Lowering.GEMM, graph=_dense_graph)
CUDA_RULES["matmul"] = CudaRule(Lowering.GEMM)
CUDA_RULES["batch_matmul"] = CudaRule(Lowering.GEMM)

CUDA_RULES["softmax"] = CudaRule(
    Lowering.REDUCTION, body=_REDUCE_BODY["softmax"], default_axis=-1, keeps_shape=True
)
CUDA_RULES["layer_norm"] = CudaRule(
    Lowering.REDUCTION,
    body=_REDUCE_BODY["layer_norm"],
    default_axis=-1,
    keeps_shape=True,
    operands=("GAMMA", "BETA"),
    consts=lambda attrs: [f"const float EPS = {_literal(float(attrs.get('eps', 1e-5)))};"],
)
for _name in ("sum", "mean", "max"):
    CUDA_RULES[_name] = CudaRule(Lowering.REDUCTION, body=_REDUCE_BODY[_name])


# ----------------------------------------------------------------------------- planning


def _kernel_prefix(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if safe != name:  # keep distinct kernels distinct after cleaning
        safe += "_" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return "acr_" + safe


def plan_kernel(f: Function) -> CudaPlan:
    """The GPU plan of one kernel function (pure code generation, no GPU needed)."""
    g = _Graph(f)
    prefix = _kernel_prefix(f.name)
    temps: dict[str, bool] = {}  # values held in memory by an earlier step -> batched?
    steps: list[Launch | Gemm] = []

    def materialize(keys: list[str]) -> None:
        steps.append(_elementwise(g, f"{prefix}_{len(steps)}", keys, dict(temps)))
        temps.update(dict.fromkeys(keys, True))

    def in_memory(key: str) -> bool:
        return key in temps or g.nodes[key].op in (PARAM, WEIGHT)

    for key in g.order:
        node = g.nodes[key]
        lowering = CUDA_RULES[node.op].lowering
        if lowering is Lowering.GEMM:
            need = [a for a in dict.fromkeys(node.args) if not in_memory(a)]
            if need:
                materialize(need)
            a, b = node.args
            ab, bb = (temps.get(k, g.nodes[k].batched) for k in (a, b))
            ranks = (len(g.nodes[a].shape), len(g.nodes[b].shape))
            tb = bool(node.attrs.get("transpose_b"))
            steps.append(Gemm(key, node.op, a, b, *ranks, ab, bb, node.shape, tb))
            temps[key] = ab or bb
        elif lowering is Lowering.REDUCTION:
            steps.append(_reduction(g, f"{prefix}_{len(steps)}", key, dict(temps)))
            temps[key] = True
    last = [k for k in dict.fromkeys(g.outputs) if not temps.get(k)]
    if last:
        materialize(last)
    outputs = tuple((k, g.nodes[k].shape) for k in g.outputs)
    return CudaPlan(
        f.name,
        tuple(g.params),
        tuple(steps),
        outputs,
        tuple(g.id_limits.items()),
        tuple(g.bad_ids),
    )
