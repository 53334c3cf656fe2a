"""Backend selection (issue #6): ``"cupy"`` runs only where CUDA works and otherwise raises
a typed error that says why; ``"auto"`` then falls back to NumPy with ONE warning."""

from __future__ import annotations

import sys
import types
import warnings

import pytest

import acrobat
from acrobat.backends import BackendFallbackWarning, _warn_fallback, get_backend
from acrobat.errors import AcrobatNameError, BackendUnavailableError
from tests.backends.helpers import program
from tests.conftest import _cuda_usable
from tests.runtime.helpers import assert_outputs_equal, batch

no_cuda = pytest.mark.skipif(_cuda_usable(), reason="CUDA works on this machine")


def _fake_cupy(driver: int = 12000, devices: int = 1, broken: bool = False):
    """A stand-in ``cupy`` module whose CUDA runtime answers as told."""

    def arange(n):
        if broken:
            raise RuntimeError("cudaErrorInsufficientDriver")
        return types.SimpleNamespace(sum=lambda: n * (n - 1) // 2)

    runtime = types.SimpleNamespace(driverGetVersion=lambda: driver, getDeviceCount=lambda: devices)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime), arange=arange)


@pytest.mark.parametrize(
    ("cupy", "reason"),
    [
        (None, "CuPy, which is not installed"),
        (_fake_cupy(driver=0), "no CUDA driver"),
        (_fake_cupy(devices=0), "no CUDA device"),
        (_fake_cupy(broken=True), "CUDA does not work here: cudaErrorInsufficientDriver"),
    ],
    ids=["no-cupy", "no-driver", "no-device", "broken"],
)
def test_cupy_says_why_it_cannot_run(monkeypatch, cupy, reason):
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(BackendUnavailableError, match=reason) as e:
        get_backend("cupy")
    assert "backend='numpy'" in e.value.hint


@no_cuda
def test_cupy_raises_a_typed_error_on_this_machine():
    with pytest.raises(BackendUnavailableError) as e:
        get_backend("cupy")
    assert e.value.hint


@no_cuda
def test_auto_falls_back_to_numpy_with_one_warning():
    _warn_fallback.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backends = [get_backend("auto") for _ in range(3)]
    assert [b.name for b in backends] == ["numpy"] * 3
    assert [w.category for w in caught] == [BackendFallbackWarning]
    assert "running on NumPy" in str(caught[0].message)


@no_cuda
@pytest.mark.filterwarnings("ignore::acrobat.backends.BackendFallbackWarning")
def test_run_with_auto_gives_the_reference_outputs():
    xs, refs = batch("treelstm", 3, 1)
    res = acrobat.run(program("treelstm"), xs, backend="auto")
    assert res.stats["backend"] == "numpy"
    assert_outputs_equal(res.outputs, refs, "treelstm on auto")


def test_unknown_backend_is_a_name_error():
    with pytest.raises(AcrobatNameError, match="unknown backend"):
        get_backend("tpu")
