"""Backends: how a kernel runs on a batch. One file per device (tinygrad style).

* ``numpy`` — the default: generated batched NumPy kernels on the CPU;
* ``null`` — computes nothing (outputs are zeros), for testing schedulers without compute;
* ``cupy`` — the GPU (see its module); ``auto`` picks cupy when CUDA works, else numpy.
"""

from __future__ import annotations

from acrobat.errors import AcrobatNameError

BACKENDS = ("numpy", "null", "cupy", "auto")


def get_backend(name: str):
    """The backend object for ``name``."""
    if name == "numpy":
        from acrobat.backends.numpy_backend import NumpyBackend

        return NumpyBackend()
    if name == "null":
        from acrobat.backends.null_backend import NullBackend

        return NullBackend()
    raise AcrobatNameError(f"unknown backend {name!r}", hint=f"choose one of {BACKENDS}")
