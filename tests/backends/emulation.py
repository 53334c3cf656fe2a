"""CUDA plans run on the CPU, so CI checks what the GPU kernels compute without a GPU.

The generated CUDA C is compiled as C++ by ``g++`` behind a small shim: one block of one
thread (every generated kernel loops over its work with grid/block strides, and the
block reductions accept any power-of-two block, 1 included). NumPy is the array module
and ``ctypes`` the launcher; :class:`PlanRunner` is the backend's own.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np

from acrobat.backends.cupy_backend import PlanRunner
from acrobat.codegen.cuda_kernels import CudaPlan, Launch

GXX = shutil.which("g++")

SHIM = r"""
#include <math.h>
#include <string.h>
struct acr_dim3 { unsigned x, y, z; };
static const acr_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
static const acr_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() ((void)0)
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, sizeof d); return d; }
"""


def host_library(plans: list[CudaPlan], workdir: Path) -> ctypes.CDLL:
    """Every launch of ``plans`` compiled for the host into one shared library."""
    sources = dict.fromkeys(s.source for p in plans for s in p.launches)
    text = SHIM + "\n".join(sources)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    cpp, lib = workdir / f"k{digest}.cpp", workdir / f"k{digest}.so"
    if not lib.exists():
        cpp.write_text(text)
        cmd = [GXX, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-o", str(lib), str(cpp)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(lib))


def call_host_kernel(fn, args: list) -> None:
    """Call a host-compiled kernel with launch arguments (``np.int64`` and arrays)."""
    c_args = []
    for a in args:
        if isinstance(a, np.integer):
            c_args.append(ctypes.c_longlong(int(a)))
        else:
            assert a.flags.c_contiguous and a.dtype in (np.float32, np.int64)
            c_args.append(ctypes.c_void_p(a.ctypes.data))
    fn(*c_args)


class EmulatedCudaBackend:
    """The cupy backend's plans and runner, with NumPy arrays and host-compiled kernels."""

    name = "cuda-emulated"
    xp = np
    fused_gather = True
    gather_copies = False  # as the CUDA kernels it emulates

    def __init__(self, prog, workdir: Path):
        self.plans = {k.name: k.cuda_plan for k in prog.kernels.values()}
        self.lib = host_library(list(self.plans.values()), workdir)

    def compile(self, kernel, params):
        plan = self.plans[kernel.name]

        def weight(name: str, transposed: bool):
            a = params[name]
            return np.ascontiguousarray(a.T if transposed else a)

        return PlanRunner(plan, np, weight, self.launch), plan.source

    def launch(self, step: Launch, B: int, args: list) -> None:
        call_host_kernel(getattr(self.lib, step.name), args)

    @staticmethod
    def to_device(a: np.ndarray) -> np.ndarray:
        return a

    @staticmethod
    def to_host(a) -> np.ndarray:
        return np.array(a)

    def synchronize(self) -> None:
        """Host code: nothing to wait for."""

    def take_device_ms(self) -> None:
        """No device clock (the kernels run on the host)."""
        return None


class _Event:
    def record(self) -> None:
        """Host code: the event is complete at once."""

    def synchronize(self) -> None:
        """Nothing to wait for."""


class FakeCupy(types.ModuleType):
    """A stand-in ``cupy`` module: NumPy arrays, and ``RawKernel`` functions taken from a
    host library. Lets the real :class:`CupyBackend` run end to end without a GPU; it is
    a different module object from NumPy, so the host-to-device upload path runs too."""

    def __init__(self, lib: ctypes.CDLL):
        super().__init__("cupy")
        self.compiled: list[str] = []
        self.launched: list[tuple[str, tuple, tuple]] = []
        fake = self

        class RawKernel:
            def __init__(self, source: str, name: str, options=()):
                self.name, self.fn = name, getattr(lib, name)

            def compile(self) -> None:
                fake.compiled.append(self.name)

            def __call__(self, grid, block, args):
                fake.launched.append((self.name, grid, block))
                call_host_kernel(self.fn, list(args))

        runtime = types.SimpleNamespace(driverGetVersion=lambda: 12000, getDeviceCount=lambda: 1)
        stream = types.SimpleNamespace(synchronize=lambda: None)
        self.RawKernel = RawKernel
        self.asnumpy = np.asarray
        self.cuda = types.SimpleNamespace(
            runtime=runtime,
            Event=_Event,
            get_elapsed_time=lambda start, end: 0.5,
            get_current_stream=lambda: stream,
        )

    def __getattr__(self, name: str):
        return getattr(np, name)
