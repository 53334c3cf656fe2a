"""The reference engine: Python and NumPy only.

The readable specification of what a runtime does, and the oracle the native engine is
tested against: ADT values as :class:`acrobat.ir.values.AdtValue` objects, entry checks
one instance at a time, the executor's flush loop in Python
(:meth:`acrobat.runtime.executor.Executor.run`), the leveling scheduler of
:mod:`acrobat.runtime.leveling` (numba where installed, else Python), products by NumPy's
``matmul`` and elementwise chains as NumPy expressions, the Python host program.
"""

from __future__ import annotations

import numpy as np

from acrobat.codegen.numpy_kernels import NUMPY_PRODUCTS
from acrobat.ir.values import AdtValue, from_list, to_list
from acrobat.runtime.engines import Engine


class PythonMaker:
    """ADT values in Python: ``make(ctor, fields)``, ``make.list``, ``make.items``."""

    __slots__ = ()

    def __call__(self, ctor, fields=()):
        return AdtValue(ctor, fields)

    list = staticmethod(from_list)
    items = staticmethod(to_list)


PYTHON_MAKER = PythonMaker()


def _int64s(shape) -> np.ndarray:
    return np.empty(shape, np.int64)


def make(why: str, status=lambda: "not reported", load_ms=lambda: 0.0) -> Engine:
    """The reference engine, running because ``why``; ``status`` and ``load_ms`` report
    the native core's state in this process (``RunStats.native``, ``jit_ms``), which this
    engine does not use."""
    return Engine(
        name="reference",
        why=why,
        maker=PYTHON_MAKER,
        checks=None,
        flush=None,
        new_int64s=_int64s,
        products=NUMPY_PRODUCTS,
        host_c=None,
        threads=None,
        status=status,
        load_ms=load_ms,
    )
