"""The CuPy backend: kernels run on a CUDA GPU as generated, gather-fused CUDA C + cuBLAS.

Each kernel is planned by :mod:`acrobat.codegen.cuda_kernels` into a few steps (the
plan, ``KernelSpec.cuda_plan``, belongs to the compiled program), compiled
once per kernel (``cupy.RawKernel``, cached by source) and run by :class:`PlanRunner`.
Arenas live on the device (``xp = cupy``); weights are uploaded once and stay resident;
a batch's index arrays go up in ONE host-to-device copy. Every kernel call is timed with
a pair of CUDA events, read back by :meth:`CupyBackend.take_device_ms`.

Kernel functions accept two calling conventions for a batched argument: a gathered
``[B, *shape]`` array (read with identity indices), or ``(arena buffer, rows)`` with
``rows`` a host (NumPy) or device index array: the fused gather the GPU is built for
(``fused_gather = True``). ``PlanRunner`` only needs an array module and a launcher, so
the tests run the very same plans on the CPU with host-compiled kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from acrobat.codegen.cuda_kernels import REDUCE_BLOCK, CudaPlan, Gemm, Launch
from acrobat.codegen.numpy_kernels import block_start, dense_by_value
from acrobat.errors import BackendUnavailableError, IndexOutOfRange

_HINT = "use backend='numpy', or backend='auto' to fall back to it automatically"


def load_cupy():
    """The ``cupy`` module once CUDA is known to work; else why not, as a typed error."""
    try:
        import cupy
    except ImportError:
        raise BackendUnavailableError(
            "the cupy backend needs CuPy, which is not installed",
            hint="pip install 'acrobat[gpu]' (cupy-cuda12x), or " + _HINT,
        ) from None
    try:
        driver = cupy.cuda.runtime.driverGetVersion()
    except Exception:  # CuPy's own runtime library failed to load
        driver = 0
    if driver == 0:
        raise BackendUnavailableError(
            "no CUDA driver was found (CuPy is installed, but libcuda is missing)",
            hint="install the NVIDIA driver, or " + _HINT,
        )
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # cudaErrorNoDevice and friends
        count = 0
    if count == 0:
        raise BackendUnavailableError(
            "no CUDA device is visible",
            hint="check nvidia-smi and CUDA_VISIBLE_DEVICES, or " + _HINT,
        )
    try:
        if int(cupy.arange(3).sum()) != 3:
            raise RuntimeError("a test kernel computed a wrong sum")
    except Exception as e:  # a driver too old for this CuPy, NVRTC missing, ...
        raise BackendUnavailableError(f"CUDA does not work here: {e}", hint=_HINT) from None
    return cupy


def check_ids(xp, ids, size: int) -> None:
    """Embedding ids must lie in the table (a GPU would read out of bounds silently)."""
    bad = (ids < 0) | (ids >= size)
    if bool(bad.any()):
        pos = int(xp.argmax(bad))
        raise IndexOutOfRange(pos, int(ids[pos]), size)


class PlanRunner:
    """Runs a :class:`CudaPlan` for one batch: its launches and products, in order.

    ``weight(name, transposed)`` gives a resident weight; ``launch(step, B, args)`` runs
    one generated function (``args``: ``np.int64(B)``, then arrays, pointer order)."""

    def __init__(self, plan: CudaPlan, xp, weight: Callable, launch: Callable):
        self.plan, self.xp, self.weight, self.launch = plan, xp, weight, launch
        self.shapes = {k: s for k, _, s in plan.params}
        self.out_pos = {k: j for j, (k, _) in reversed(list(enumerate(plan.outputs)))}
        self.id_limits = dict(plan.id_limits)
        self.iota = xp.arange(0, dtype=np.int64)

    def __call__(self, B: int, *args, out=None) -> tuple:
        """Outputs as ``[B, *shape]`` arrays (written into ``out`` views when given)."""
        if self.plan.bad_ids and B:  # a constant id outside its table: every instance
            raise IndexOutOfRange(0, *self.plan.bad_ids[0])
        reads = self.bind(B, args)
        env: dict[str, Any] = {}
        direct: set[str] = set()
        for step in self.plan.steps:
            if isinstance(step, Gemm):
                env[step.out] = self.gemm(step, B, env, reads)
                continue
            outs = []
            for key, shape in step.outputs:
                j = self.out_pos.get(key)
                if out is not None and j is not None and out[j].flags.c_contiguous:
                    outs.append(out[j])
                    direct.add(key)
                else:
                    outs.append(self.xp.empty((B,) + shape, np.float32))
            env.update((k, o) for (k, _), o in zip(step.outputs, outs))
            self.launch(step, B, [np.int64(B), *outs, *self.inputs(step, env, reads)])
        if out is None:
            return tuple(env[k].reshape((B,) + s) for k, s in self.plan.outputs)
        for j, (k, _) in enumerate(self.plan.outputs):
            if k not in direct or self.out_pos[k] != j:
                out[j][...] = env[k].reshape(out[j].shape)
        return tuple(out)

    def bind(self, B: int, args) -> dict[str, tuple]:
        """Per param: ``(buffer [rows, W], device indices, first row if consecutive)``;
        host-side index arrays are uploaded together, in one copy."""
        xp = self.xp
        reads: dict[str, tuple] = {}
        pending: list[tuple[str, Any, int | None, np.ndarray]] = []
        for (key, mode, _), a in zip(self.plan.params, args):
            if mode == "host":
                buf, rows, start = None, a, None
                if key in self.id_limits:  # on the host when the ids are there: no sync
                    check_ids(np if isinstance(a, np.ndarray) else xp, a, self.id_limits[key])
            elif isinstance(a, tuple):
                buf, rows = a
                start = block_start(rows) if isinstance(rows, np.ndarray) else None
            else:
                buf = xp.ascontiguousarray(xp.asarray(a)).reshape(B, -1)
                rows, start = self.identity(B), 0
            if isinstance(rows, np.ndarray) and xp is not np:
                pending.append((key, buf, start, rows))
            else:
                reads[key] = (buf, xp.ascontiguousarray(rows, dtype=np.int64), start)
        if pending:
            dev = xp.asarray(np.concatenate([p[3] for p in pending]).astype(np.int64))
            at = 0
            for key, buf, start, rows in pending:
                reads[key] = (buf, dev[at : at + len(rows)], start)
                at += len(rows)
        return reads

    def identity(self, B: int):
        if len(self.iota) < B:
            self.iota = self.xp.arange(max(B, 2 * len(self.iota)), dtype=np.int64)
        return self.iota[:B]

    def inputs(self, step: Launch, env: dict, reads: dict) -> list:
        vals = []
        for kind, key in step.inputs:
            if kind == "param":
                vals += reads[key][:2]
            elif kind == "host":
                vals.append(reads[key][1])
            elif kind == "weight":
                vals.append(self.weight(key[1:], False))
            else:
                vals.append(env[key])
        return vals

    def operand(self, key: str, B: int, env: dict, reads: dict, transposed: bool = False):
        """A product operand in memory: a temp, a resident weight, or a param's rows."""
        if key in env:
            return env[key]
        if key.startswith("$"):
            return self.weight(key[1:], transposed)
        buf, idx, start = reads[key]
        rows = buf[start : start + B] if start is not None else self.xp.take(buf, idx, axis=0)
        return rows.reshape((B,) + self.shapes[key])

    def dense_by_value(self, a, w, s: Gemm):
        """``dense`` whose weight is a value, not a resident weight: the NumPy kernels'
        rule (:func:`~acrobat.codegen.numpy_kernels.dense_by_value`) on ``xp``."""
        return dense_by_value(self.xp, a, w, s.a_rank, s.a_batched, s.b_batched)

    def gemm(self, s: Gemm, B: int, env: dict, reads: dict):
        """``s`` with the batched NumPy backend's rules for where the batch axis goes."""
        xp = self.xp
        a = self.operand(s.a, B, env, reads)
        b = self.operand(s.b, B, env, reads, transposed=s.op == "dense")
        if s.op == "batch_matmul" and s.transpose_b:
            b = xp.swapaxes(b, -1, -2)
        if s.op == "dense" and not s.b.startswith("$"):
            y = self.dense_by_value(a, b, s)
        elif s.op == "matmul" and s.a_batched and s.b_batched and s.a_rank == s.b_rank == 1:
            y = (a * b).sum(-1)
        elif s.op == "matmul" and s.a_batched and s.b_batched:
            y = xp.matmul(
                a[:, None, :] if s.a_rank == 1 else a, b[..., None] if s.b_rank == 1 else b
            )
        elif s.op == "matmul" and not s.a_batched and s.b_batched and s.b_rank == 1:
            y = xp.matmul(b, a.T if s.a_rank == 2 else a)
        else:
            y = xp.matmul(a, b)
        return xp.ascontiguousarray(y).reshape(((B,) if s.batched else ()) + s.shape)


class CupyBackend:
    """Generated CUDA kernels and cuBLAS on the current CUDA device."""

    name = "cupy"
    fused_gather = True  # kernels take (arena buffer, rows) per batched argument
    gather_copies = False  # ... and read through the row indices: no copy

    def __init__(self, timing: bool = True):
        self.xp = load_cupy()
        self.timing = timing
        self.weights: dict[tuple[int, bool], Any] = {}
        self.modules: dict[str, Any] = {}
        self.events: list[tuple[Any, Any]] = []

    def compile(self, kernel, params: dict[str, np.ndarray]):
        """A callable ``fn(B, *args, out=None) -> tuple of [B, ...] arrays`` and its source."""
        plan = kernel.cuda_plan  # made once per kernel, owned by the program
        for step in plan.launches:
            self.raw_kernel(step)

        def weight(name: str, transposed: bool):
            a = params[name]
            key = (id(a), transposed)
            if key not in self.weights:
                self.weights[key] = self.xp.asarray(np.ascontiguousarray(a.T if transposed else a))
            return self.weights[key]

        runner = PlanRunner(plan, self.xp, weight, self.launch)
        if not self.timing:
            return runner, plan.source

        def fn(B: int, *args, out=None):
            start, end = self.xp.cuda.Event(), self.xp.cuda.Event()
            start.record()
            result = runner(B, *args, out=out)
            end.record()
            self.events.append((start, end))
            return result

        return fn, plan.source

    def raw_kernel(self, step: Launch):
        """The compiled function of one launch, cached by source (compiled once)."""
        k = self.modules.get(step.source)
        if k is None:
            k = self.modules[step.source] = self.xp.RawKernel(
                step.source, step.name, options=("-std=c++17",)
            )
            k.compile()
        return k

    def launch(self, step: Launch, B: int, args: list) -> None:
        if step.kind == "elementwise":
            block = 256
            grid = min(-(-B * step.work // block), 1 << 16)
        else:  # one block per row, a power of two threads
            block = min(REDUCE_BLOCK, max(32, 1 << (step.reduce_len - 1).bit_length()))
            grid = min(B * step.work, 1 << 16)
        self.raw_kernel(step)((max(grid, 1),), (block,), tuple(args))

    def take_device_ms(self) -> list[float]:
        """Device time (ms) of every kernel call since the last call, in call order."""
        if not self.events:
            return []
        self.events[-1][1].synchronize()
        times = [self.xp.cuda.get_elapsed_time(s, e) for s, e in self.events]
        self.events.clear()
        return times

    def to_device(self, a: np.ndarray):
        return self.xp.asarray(np.ascontiguousarray(a))

    def to_host(self, a) -> np.ndarray:
        return self.xp.asnumpy(a)

    def synchronize(self) -> None:
        """Wait for every launched kernel (host timers then include device time)."""
        self.xp.cuda.get_current_stream().synchronize()
