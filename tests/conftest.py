"""Shared pytest setup: skip `gpu` tests without CUDA; e2e tests fail (not skip) without Chromium."""

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")


def _cuda_usable() -> bool:
    """True when CuPy imports and can run a tiny kernel on a CUDA device."""
    try:
        import cupy

        return int(cupy.arange(3).sum()) == 3
    except Exception:  # no cupy, no driver, no device: all mean "no GPU here"
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and not _cuda_usable():
        skip = pytest.mark.skip(reason="needs a usable CUDA device (cupy)")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Path of Debian's Chromium for e2e tests; fails (never skips) when it is missing."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make setup` (apt-get install chromium)")
    return str(CHROMIUM)
