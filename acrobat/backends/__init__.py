"""Backends: how a kernel runs on a batch. One file per device (tinygrad style).

* ``numpy`` — the default: generated batched NumPy kernels on the CPU;
* ``null`` — computes nothing (outputs are zeros), for testing schedulers without compute;
* ``cupy`` — the GPU (see its module).

Each backend is registered once (:func:`register_backend`) with a factory and an
availability check; :func:`backends` lists them with whether they can run here and why
not (``acrobat.backends()`` is the public view). ``"auto"`` is not a backend but a
choice (:data:`AUTO`): the first available of :data:`AUTO_PREFERS`, else NumPy, with one
:class:`BackendFallbackWarning`. :func:`backend_choices` is what ``backend=`` accepts.
"""

from __future__ import annotations

import functools
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acrobat.backends.base import Backend
from acrobat.backends.cupy_backend import CupyBackend, load_cupy
from acrobat.backends.null_backend import NullBackend
from acrobat.backends.numpy_backend import NumpyBackend
from acrobat.errors import AcrobatNameError, BackendUnavailableError
from acrobat.registry import Registry

AUTO = "auto"  # a choice, not a backend: see get_backend
AUTO_PREFERS = "cupy"  # what "auto" tries before falling back to FALLBACK
FALLBACK = "numpy"


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend: can it run here, and if not, why (``reason`` is ``""`` when
    ``available``)."""

    name: str
    available: bool
    reason: str
    doc: str = ""


@dataclass(frozen=True)
class _Backend:
    name: str
    factory: Callable[[], Any]
    check: Callable[[], tuple[bool, str]]
    doc: str


_BACKENDS: Registry[_Backend] = Registry("backend")


def _always() -> tuple[bool, str]:
    return True, ""


def register_backend(
    name: str,
    factory: Callable[[], Any],
    *,
    check: Callable[[], tuple[bool, str]] = _always,
    doc: str = "",
) -> None:
    """Register backend ``name``: ``factory()`` builds the backend object (raising
    :class:`BackendUnavailableError` when it cannot run here); ``check()`` answers
    ``(available, reason)`` without building it."""
    if name == AUTO:
        raise AcrobatNameError("'auto' is a choice among backends, not a backend name")
    _BACKENDS.add(name, _Backend(name, factory, check, doc))


def unregister_backend(name: str) -> None:
    """Remove backend ``name`` (raises :class:`AcrobatNameError` if it is not registered)."""
    _BACKENDS.remove(name)


def backends() -> tuple[BackendInfo, ...]:
    """Every registered backend in registration order, with its availability here."""
    out = []
    for b in _BACKENDS.values():
        available, reason = b.check()
        out.append(BackendInfo(b.name, bool(available), "" if available else reason, b.doc))
    return tuple(out)


def backend_choices() -> tuple[str, ...]:
    """What ``backend=`` accepts: every registered backend, then ``"auto"``."""
    return (*_BACKENDS, AUTO)


def _entry(name: str) -> _Backend:
    if name in _BACKENDS:
        return _BACKENDS[name]
    raise AcrobatNameError(f"unknown backend {name!r}", hint=f"choose one of {backend_choices()}")


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
    if name == AUTO:
        try:
            return _entry(AUTO_PREFERS).factory()
        except BackendUnavailableError as e:
            _warn_fallback(e.message)
            return _entry(FALLBACK).factory()
    return _entry(name).factory()


# The built-in backends, in their canonical order. Building one is cheap; CuPy itself is
# imported only when the cupy backend is built or checked (importing it touches a device).


def _cupy_check() -> tuple[bool, str]:
    try:
        load_cupy()
    except BackendUnavailableError as e:
        return False, e.message
    return True, ""


register_backend("numpy", NumpyBackend, doc="generated batched NumPy kernels on the CPU (default)")
register_backend("null", NullBackend, doc="computes nothing (zeros): schedulers without compute")
register_backend("cupy", CupyBackend, check=_cupy_check, doc="generated CUDA kernels on the GPU")


class _CallablePackage(types.ModuleType):
    """``acrobat.backends`` is both this package and, called, :func:`backends`: the facade's
    ``acrobat.backends()`` then never hides the package (``import acrobat.backends as b``,
    ``acrobat.backends.get_backend`` and ``monkeypatch.setattr("acrobat.backends.X", ...)``
    all keep reaching the package)."""

    def __call__(self) -> tuple[BackendInfo, ...]:
        return backends()


sys.modules[__name__].__class__ = _CallablePackage
