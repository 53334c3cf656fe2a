"""Every backend satisfies the Backend protocol the runtime relies on."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import acrobat.backends.cupy_backend as cupy_backend
from acrobat.backends import get_backend
from acrobat.backends.base import Backend
from acrobat.backends.cupy_backend import CupyBackend
from acrobat.backends.null_backend import NullBackend
from acrobat.backends.numpy_backend import NumpyBackend
from tests.backends.emulation import EmulatedCudaBackend


def test_protocol_members():
    hints = typing.get_type_hints(Backend)
    assert {"name", "xp", "fused_gather"} <= set(hints)
    for m in ("compile", "to_device", "to_host", "synchronize", "take_device_ms"):
        assert callable(getattr(Backend, m))


@pytest.mark.parametrize("cls", [NumpyBackend, NullBackend, CupyBackend, EmulatedCudaBackend])
def test_every_backend_declares_its_calling_convention(cls):
    assert isinstance(cls.__dict__.get("fused_gather"), bool)
    assert isinstance(cls.__dict__.get("gather_copies"), bool)
    assert isinstance(cls.__dict__.get("name"), str)


@pytest.mark.parametrize("name", ["numpy", "null"])
def test_cpu_backends_satisfy_the_protocol(name):
    backend = get_backend(name)
    assert isinstance(backend, Backend)
    # NumPy kernels gather their own rows (copying scattered ones); null takes arrays
    assert backend.fused_gather is (name == "numpy") and backend.gather_copies is True
    assert backend.take_device_ms() is None  # no device clock
    assert backend.xp is np


def test_cupy_backend_satisfies_the_protocol(monkeypatch):
    """Without a GPU: the real class, with NumPy standing in for the cupy module."""
    monkeypatch.setattr(cupy_backend, "load_cupy", lambda: np)
    backend = CupyBackend()
    assert isinstance(backend, Backend)
    assert backend.fused_gather is True
    assert backend.take_device_ms() == []  # a device clock, nothing launched yet


def test_emulated_backend_satisfies_the_protocol():
    backend = EmulatedCudaBackend.__new__(EmulatedCudaBackend)  # no kernels to build
    assert isinstance(backend, Backend)
