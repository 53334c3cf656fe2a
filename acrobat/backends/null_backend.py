"""The null backend: shapes only. Kernels return zeros; launches are still recorded, so
schedulers and the executor can be tested without computing anything."""

from __future__ import annotations

import numpy as np

from acrobat.ir.types import TupleType


class NullBackend:
    """Every kernel returns zero tensors of its output shapes."""

    name = "null"
    xp = np
    fused_gather = False  # kernels take gathered [B, ...] arrays
    gather_copies = True  # (only with fused_gather)

    def compile(self, kernel, params):
        ret = kernel.function.ret
        outs = ret.fields if isinstance(ret, TupleType) else (ret,)
        shapes = [tuple(t.shape) for t in outs]

        def fn(B, *args):
            return tuple(np.zeros((B,) + s, np.float32) for s in shapes)

        return fn, f"# null kernel {kernel.name}: returns zeros of {shapes}\n"

    @staticmethod
    def to_device(a: np.ndarray) -> np.ndarray:
        return a

    @staticmethod
    def to_host(a) -> np.ndarray:
        return np.array(a)

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def take_device_ms(self) -> None:
        """No device clock."""
        return None
