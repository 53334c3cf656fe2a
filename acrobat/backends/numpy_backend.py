"""The NumPy backend: batched kernels generated as NumPy source, run on the CPU."""

from __future__ import annotations

import numpy as np

from acrobat.codegen.numpy_kernels import compile_numpy_kernel


class NumpyBackend:
    """Compiles each kernel to a batched NumPy function (weights bound once)."""

    name = "numpy"
    xp = np
    # Kernels take gathered [B, ...] arrays. The generated kernels also take the fused
    # convention ((arena buffer, rows), out=views: fewer copies, MV-RNN -6..-18%), but the
    # executor counts bytes_gathered only in this one; switch when it counts both.
    fused_gather = False

    def compile(self, kernel, params: dict[str, np.ndarray]):
        """A callable ``fn(B, *args) -> tuple of [B, ...] arrays`` and its source."""
        k = compile_numpy_kernel(kernel.function, params)
        return k.fn, k.source

    @staticmethod
    def to_device(a: np.ndarray) -> np.ndarray:
        return a

    @staticmethod
    def to_host(a) -> np.ndarray:
        return np.array(a)

    def synchronize(self) -> None:
        """Nothing to wait for on the CPU."""

    def take_device_ms(self) -> None:
        """No device clock: kernels run on the host, timed by the host."""
        return None
