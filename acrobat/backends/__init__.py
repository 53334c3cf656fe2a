"""Backends: how a kernel runs on a batch. One file per device (tinygrad style).

* ``numpy`` — the default: generated batched NumPy kernels on the CPU;
* ``null`` — computes nothing (outputs are zeros), for testing schedulers without compute;
* ``cupy`` — the GPU (see its module); ``auto`` picks cupy when CUDA works, else numpy.
"""

from __future__ import annotations

import functools
import warnings

from acrobat.backends.base import Backend
from acrobat.backends.cupy_backend import CupyBackend
from acrobat.backends.null_backend import NullBackend
from acrobat.backends.numpy_backend import NumpyBackend
from acrobat.errors import AcrobatNameError, BackendUnavailableError

BACKENDS = ("numpy", "null", "cupy", "auto")


class BackendFallbackWarning(UserWarning):
    """``backend="auto"`` found no usable GPU and runs on NumPy instead."""


@functools.cache  # one warning per process and reason, whatever the warning filters say
def _warn_fallback(reason: str) -> None:
    warnings.warn(
        f"backend='auto': CUDA is not usable ({reason}); running on NumPy",
        BackendFallbackWarning,
        stacklevel=3,
    )


def get_backend(name: str) -> Backend:
    """The backend object for ``name``; ``"cupy"`` raises :class:`BackendUnavailableError`
    saying why when CUDA does not work, ``"auto"`` then falls back to NumPy."""
    if name == "numpy":
        return NumpyBackend()
    if name == "null":
        return NullBackend()
    if name in ("cupy", "auto"):
        try:
            return CupyBackend()
        except BackendUnavailableError as e:
            if name == "cupy":
                raise
            _warn_fallback(e.message)
            return get_backend("numpy")
    raise AcrobatNameError(f"unknown backend {name!r}", hint=f"choose one of {BACKENDS}")
