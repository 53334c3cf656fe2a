"""Engines: what runs a prepared program besides its backend's kernels, chosen once.

A runtime (:class:`acrobat.runtime.run.Runtime`) needs a maker of ADT values and bulk
checks of entry arguments, the flush (records -> DFG -> the policy's batches -> launches,
in arena memory), the leveling scheduler, reading outputs back, the products and
elementwise chains its NumPy kernels call, the compiled host program and a thread rule for
its products. Two engines provide them, behind one :class:`Engine` record:

* ``reference`` (:mod:`.reference`): Python and NumPy only — the readable specification,
  the oracle the other is tested against, and what runs where the native core cannot;
* ``native`` (:mod:`.native`): the C core (:mod:`acrobat.native`): the flush runner, the
  leveling scheduler, ADT values and checks, the small-row GEMM and fused elementwise
  chains, the compiled host program.

:func:`choose` picks one when a runtime is made — the ``engine=`` argument of
``acrobat.run`` / ``prepare``, else the environment variable :data:`ENV`, else ``native``
where its core loads and ``reference`` where it does not (the native package warns once
per process, ``NativeFallbackWarning``, where its core fails to load) — and ``RunStats.engine`` says which ran and why. Nothing outside this package
imports :mod:`acrobat.native` (``tests/test_layering.py``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acrobat.errors import AcrobatError, AcrobatNameError

ENV = "ACROBAT_ENGINE"
ENGINES = ("native", "reference")


@dataclass(frozen=True)
class Engine:
    """What an engine provides; a reference engine's native parts are None.

    Attributes:
        name: ``"native"`` or ``"reference"``.
        why: why this engine runs (asked for, or what ``auto`` found).
        maker: ``make(ctor, fields)``, ``make.list(items)``, ``make.items(value)``: the ADT
            values of host programs and outputs.
        checks: bulk entry checks (``fits``: a maker's walk of many values, ``tensors_fit``:
            many instances of tensor parameters), or None: one by one in Python.
        flush: the native flush (``plan_rows``, ``run_flush``, ``schedule_flush``,
            ``fiber_flush``, ``read_answers``, ``read_rows``, ``list_schedule``,
            ``set_cancel``), or None:
            the executor's Python loop and the Python (or numba) scheduler.
        new_int64s: ``new_int64s(shape)``, an int64 array (``numpy.empty``'s).
        products: what the NumPy kernels call for products and elementwise chains
            (:class:`acrobat.codegen.numpy_kernels.Products`).
        host_c: builds and loads compiled host programs (``build(source, placeholder) ->
            (module, ms)``, ``cached(source) -> bool``), or None: the Python program.
        threads: the native products' thread rule (``set_threads(n, own)``), or None.
        status: the native core's state in this process (``RunStats.native``).
        load_ms: what loading (or building) the native core cost this process.
    """

    name: str
    why: str
    maker: Any
    checks: Any
    flush: Any
    new_int64s: Callable
    products: Any
    host_c: Any
    threads: Any
    status: Callable[[], str]
    load_ms: Callable[[], float]

    def describe(self) -> str:
        """``"native (why)"``: what ``RunStats.engine`` says."""
        return f"{self.name} ({self.why})"


class EngineUnavailable(AcrobatError):
    """The native engine was asked for where its core cannot load."""


def choose(engine: str | None = None) -> Engine:
    """The engine for a new runtime: ``engine`` ("native", "reference" or None: the
    environment variable :data:`ENV`, else "auto")."""
    from acrobat.runtime.engines import native, reference

    asked, source = engine, "engine=" + repr(engine)
    if asked is None:
        asked, source = os.environ.get(ENV, "auto") or "auto", f"{ENV}={os.environ.get(ENV)}"
    if asked not in (*ENGINES, "auto"):
        raise AcrobatNameError(
            f"unknown engine {asked!r} ({source})", hint=f"choose one of {ENGINES} or 'auto'"
        )
    core = (native.status, native.load_ms)  # what RunStats.native reports either way
    if asked == "reference":
        return reference.make(f"asked for ({source})", *core)
    made, off = native.make()
    if made is not None:
        return made if asked == "auto" else dataclasses.replace(made, why=f"asked for ({source})")
    if asked == "native":
        raise EngineUnavailable(
            f"the native engine cannot run here: {off}",
            hint=f"use engine='reference' (or unset {ENV}); `python -m acrobat doctor` "
            "says what the native core needs",
        )
    # (acrobat.native has warned once, NativeFallbackWarning, where its core failed to load)
    return reference.make(f"auto: the native core is off ({off})", *core)
