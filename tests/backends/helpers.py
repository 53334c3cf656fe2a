"""Shared helpers for the backend tests: compiled programs per model/size, and kernel
arguments in both calling conventions (gathered arrays, or arena buffer + rows)."""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass

import numpy as np

import acrobat
from acrobat.backends import get_backend
from acrobat.codegen.cuda_kernels import CudaPlan, plan_kernel

MODELS = acrobat.models.MODEL_NAMES + acrobat.models.VARIANTS
SIZES = ("tiny", "small", "large")


@functools.cache
def program(model: str, size: str = "tiny"):
    s = acrobat.models.load(model, size)
    return acrobat.compile(s.module, s.params)


@functools.cache
def plans(model: str, size: str) -> tuple[CudaPlan, ...]:
    return tuple(plan_kernel(k.function) for k in program(model, size).kernels.values())


# The ops and operand layouts the models do not use: 1-d/2-d matmuls, a weight on the left,
# reductions along an axis, concat on axis 1, transpose, every unary and binary op.
EVERY_OP = """
H = Size("H", 4)
W: Param[H, H]
v: Param[H]

def main(a: Tensor[H], b: Tensor[H], m: Tensor[H, H]) -> tuple[
    Tensor[()], Tensor[H], Tensor[H], Tensor[H], Tensor[H, 1], Tensor[H, 8], Tensor[H],
    Tensor[H], Tensor[1, H]
]:
    d = matmul(a, b)
    mv = matmul(m, a)
    vm = matmul(a, m)
    wv = matmul(W, b)
    s = sum(m, axis=1, keepdims=True)
    c = concat(m, transpose(m), axis=1)
    e = maximum(relu(a) - exp(b) / sqrt(ones(shape=4) + b * b), minimum(neg(a), log(exp(b))))
    f = mean(m, axis=0) + max(m, axis=1) * v
    g = softmax(reshape(m, shape=(1, 16)), axis=-1)
    return d, mv, vm, wv, s, c, e, f, slice(reshape(g, shape=(4, 4)), start=1, stop=2, axis=0)
"""


@functools.cache
def every_op_program():
    """(compiled program, module, params) of :data:`EVERY_OP`."""
    module = acrobat.parse(textwrap.dedent(EVERY_OP))
    params = acrobat.init_params(module, seed=0)
    return acrobat.compile(module, params), module, params


def every_op_instances(n: int, seed: int) -> tuple[list, list]:
    """``n`` random instances of :data:`EVERY_OP` and the reference interpreter's outputs."""
    _, module, params = every_op_program()
    rng = np.random.default_rng(seed)
    shapes = ((4,), (4,), (4, 4))
    xs = [tuple(rng.standard_normal(s).astype(np.float32) for s in shapes) for _ in range(n)]
    return xs, [acrobat.evaluate(module, x, params) for x in xs]


@dataclass
class KernelArgs:
    """One batch's arguments: arena-like buffers with rows scattered in them."""

    fused: list  # (buffer [rows, width], host rows) per batched param; ids per host param
    gathered: list  # [B, *shape] arrays per batched param; ids per host param


def kernel_args(kernel, B: int, seed: int, contiguous: bool = False) -> KernelArgs:
    """Random inputs of ``kernel`` for ``B`` instances, placed in bigger buffers."""
    rng = np.random.default_rng(seed)
    fused, gathered = [], []
    for _, ty, mode in kernel.params:
        if mode == "host":
            ids = rng.integers(0, 2, B).astype(np.int64)
            fused.append(ids)
            gathered.append(ids)
            continue
        width = max(1, int(np.prod(ty.shape)))
        buf = rng.standard_normal((3 * B + 2, width)).astype(np.float32)
        rows = np.arange(2, 2 + B) if contiguous else rng.permutation(3 * B + 2)[:B]
        fused.append((buf, rows.astype(np.int64)))
        gathered.append(buf[rows].reshape((B,) + tuple(ty.shape)))
    return KernelArgs(fused, gathered)


def numpy_kernel(prog, kernel):
    """The NumPy backend's function of ``kernel`` (the reference for the others)."""
    fn, _ = get_backend("numpy").compile(kernel, prog.params)
    return fn
