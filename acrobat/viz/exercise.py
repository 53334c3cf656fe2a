"""Checks for the lessons' exercises that a wrong answer cannot talk its way through.

The lessons' build-a-batcher exercise (lesson 01, grown in 03 and 05) hands the student plain
NumPy kernels and asks for a function ``batch_run(instances, kernels)`` that returns one output
per instance. :func:`check_batcher` calls it with every kernel wrapped in a counter
(:class:`CountedKernels`), so the number of kernel calls is what the batcher did, not what it
says it did; then it compares every output with ``acrobat.run``'s on the same instances, with
strict lengths (``zip`` would stop at the shorter list), and the counted calls with the run's
launches. Every failed check raises :class:`ExerciseFailed` with a message saying what differed.

:func:`before_after` draws the lessons' before/after figures: one instance's DFG in several runs,
side by side.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from acrobat.ir.values import values_equal


class ExerciseFailed(AssertionError):
    """An exercise's answer is wrong; the message says what differed."""


class CountedKernels(Mapping):
    """The given kernels, each wrapped so that every call is counted (and its batch size kept:
    the length of its first argument)."""

    def __init__(self, kernels: Mapping[str, Callable]) -> None:
        self._kernels = dict(kernels)
        self.calls: Counter = Counter()
        self.sizes: dict[str, list[int]] = {name: [] for name in self._kernels}

    def __getitem__(self, name: str) -> Callable:
        kernel = self._kernels[name]

        def counted(*args, **kwargs):
            self.calls[name] += 1
            self.sizes[name].append(len(args[0]) if args and hasattr(args[0], "__len__") else 1)
            return kernel(*args, **kwargs)

        return counted

    def __iter__(self):
        return iter(self._kernels)

    def __len__(self) -> int:
        return len(self._kernels)

    @property
    def total(self) -> int:
        """Kernel calls made so far, all kernels together."""
        return sum(self.calls.values())


@dataclass(frozen=True)
class BatcherChecked:
    """What a passed :func:`check_batcher` found: the calls per kernel and their total."""

    calls: Mapping[str, int]
    total: int

    def __str__(self) -> str:
        per_kernel = ", ".join(f"{k} {n}" for k, n in self.calls.items())
        return f"{self.total} kernel calls ({per_kernel})"


def check_batcher(
    batch_run: Callable[[Sequence, Mapping[str, Callable]], Any],
    instances: Sequence,
    kernels: Mapping[str, Callable],
    outputs: Sequence,
    launches: int,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> BatcherChecked:
    """Run ``batch_run(instances, counted kernels)`` and check it against a run of acrobat on the
    same instances: one output per instance, each equal to ``outputs[i]`` (``values_equal``
    with these tolerances), and exactly ``launches`` kernel calls, counted by wrapping
    ``kernels``. Raises :class:`ExerciseFailed` naming the first difference."""
    counted = CountedKernels(kernels)
    got = batch_run(instances, counted)
    if got is None:
        raise ExerciseFailed("the batcher returned None: return one output per instance")
    try:
        got = list(got)
    except TypeError:
        raise ExerciseFailed(
            f"the batcher returned a {type(got).__name__}: return a list, one output per instance"
        ) from None
    if len(got) != len(outputs):
        raise ExerciseFailed(
            f"the batcher returned {len(got)} outputs for {len(instances)} instances: "
            "return one output per instance, in order"
        )
    for i, (mine, theirs) in enumerate(zip(got, outputs, strict=True)):
        if not values_equal(_plain(mine), _plain(theirs), rtol=rtol, atol=atol):
            raise ExerciseFailed(
                f"output {i} differs from acrobat.run's: {_difference(mine, theirs)}"
            )
    calls = {name: counted.calls[name] for name in kernels}
    if counted.total != launches:
        raise ExerciseFailed(
            f"the batcher made {counted.total} kernel calls ({_per_kernel(calls)}); acrobat.run "
            f"launched {launches} on the same instances: "
            + ("batch more nodes per call" if counted.total > launches else "count again")
        )
    return BatcherChecked(calls, counted.total)


def _plain(value: Any) -> Any:
    """A value with NumPy scalars and lists of arrays made comparable by ``values_equal``."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _difference(mine: Any, theirs: Any) -> str:
    """What differs between two outputs, in words."""
    a, b = _plain(mine), _plain(theirs)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape:
            return f"shape {a.shape}, expected {b.shape}"
        worst = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
        return f"largest difference {worst:.3g} (first values {a.ravel()[:3]} vs {b.ravel()[:3]})"
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) != len(b):
        return f"a tuple of {len(a)}, expected {len(b)}"
    return f"{type(mine).__name__} {str(mine)[:60]}, expected {type(theirs).__name__} {str(theirs)[:60]}"


def _per_kernel(calls: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in calls.items())


def before_after(traces: Mapping[str, Any], instance: int = 0, color_by: str = "batch") -> str:
    """The DFG of one instance in each of several runs' traces (``{label: trace}``), side by
    side as HTML: the before/after figures of the lessons (drawn by ``dfg_view``)."""
    from acrobat.viz.dfg_view import dfg_model, dfg_svg

    return "".join(
        "<div style='display:inline-block;vertical-align:top;margin:0 10px'>"
        f"<h4>{html.escape(label)}</h4>{dfg_svg(dfg_model(trace, instance, color_by))}</div>"
        for label, trace in traces.items()
    )
