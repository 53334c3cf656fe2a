"""The native engine: the C core of :mod:`acrobat.native`.

The flush runner (``run_flush``, ``schedule_flush``, the compiled fiber program's
``fiber_flush``), the leveling scheduler (``list_schedule``), the executor's row
bookkeeping (``plan_rows``), the run's cancel flag (``set_cancel``), fiber reads and output lists (``read_answers``,
``read_rows``), ADT values and their bulk checks (``adt_maker``, ``tensors_fit``), the
products and elementwise chains of the NumPy kernels (the small-row GEMM, ``rowprog``), the
compiled host program (:func:`acrobat.native.build_extension`) and the products' thread
rule. The only module of the runtime that imports :mod:`acrobat.native`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from acrobat import native
from acrobat.codegen.numpy_kernels import Products
from acrobat.ir.values import AdtValue
from acrobat.runtime.engines import Engine


@dataclass(frozen=True)
class NativeFlush:
    """The native core's flush functions (``acrobat/native/flush.c``, ``plan.c``,
    ``sched.c``)."""

    plan_rows: Any
    run_flush: Any
    schedule_flush: Any
    fiber_flush: Any
    read_answers: Any
    read_rows: Any
    list_schedule: Any
    set_cancel: Any  # the running run's cancel flag, read before each launch


@dataclass(frozen=True)
class NativeChecks:
    """Entry checks of many instances in one native call."""

    fits: Any  # the maker's walk (values.c)
    tensors_fit: Any  # (flush.c)


class HostC:
    """Builds (or loads from the disk cache) the compiled host program of a source."""

    @staticmethod
    def build(source: str, placeholder: str):
        return native.build_extension(source, placeholder)

    @staticmethod
    def cached(source: str) -> bool:
        return native.extension_cached(source)


class Threads:
    """The native products' thread rule (:func:`acrobat.native.set_threads`)."""

    @staticmethod
    def set_threads(n: int, own: bool = False) -> None:
        if own:
            native.set_threads(n, own=True)
        else:
            native.set_threads(n)


PRODUCTS = Products(
    name="native",
    dense_rows=native.dense_rows,
    dense_rows_by_member=native.dense_rows_by_member,
    product=native.native_product,
    pack=native.pack,
    packable=native.packable,
    rowprog=None,  # set by make(), from the loaded module
)


def status() -> str:
    """The native core's state in this process (:func:`acrobat.native.status`)."""
    return native.status()


def load_ms() -> float:
    """What loading (or building) the native core cost this process."""
    return native.load_ms()


def make(why: str | None = None) -> tuple[Engine | None, str]:
    """``(the native engine, "")``, or ``(None, why it cannot run)``."""
    mod = native.load()
    if mod is None:
        return None, native.status()
    maker = native.adt_maker(AdtValue)
    flush = NativeFlush(
        plan_rows=mod.plan_rows,
        run_flush=mod.run_flush,
        schedule_flush=mod.schedule_flush,
        fiber_flush=mod.fiber_flush,
        read_answers=mod.read_answers,
        read_rows=mod.read_rows,
        list_schedule=mod.list_schedule,
        set_cancel=mod.set_cancel,
    )
    engine = Engine(
        name="native",
        why=why or f"auto: the native core is {native.status()}",
        maker=maker,
        checks=NativeChecks(maker.fits, mod.tensors_fit),
        flush=flush,
        new_int64s=native.new_int64s,
        products=dataclasses.replace(PRODUCTS, rowprog=mod.rowprog),
        host_c=HostC,
        threads=Threads,
        status=native.status,
        load_ms=native.load_ms,
    )
    return engine, ""
