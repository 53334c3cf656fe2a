"""Timing helpers shared by the baselines, the peers and the benchmark harness (the
protocol that compares configurations is :mod:`acrobat.baselines.measure`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from acrobat.ir.values import AdtValue


def timed(fn: Callable[[], Any], runs: int, warmup: int) -> tuple[list[float], Any]:
    """Wall-clock milliseconds of ``fn`` over ``runs`` runs after ``warmup`` runs."""
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return times, out


def checksum(outputs) -> float:
    """A float summarizing every tensor of the outputs (to compare runs cheaply)."""
    total = 0.0
    stack = list(outputs)
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray):
            total += float(np.asarray(v, np.float64).sum())
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, AdtValue):
            stack.extend(v.fields)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            total += float(v)
    return total
