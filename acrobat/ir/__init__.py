"""The IR: types, nodes, the op registry, inference, printing/parsing and the oracle.

``evaluate(module, instance, params)`` is the reference interpreter every batched
result is checked against.
"""

from acrobat.ir.evaluate import evaluate
from acrobat.ir.nodes import Module
from acrobat.ir.typecheck import infer_module
from acrobat.ir.values import AdtValue, from_list, init_params, to_list, values_equal

__all__ = [
    "AdtValue",
    "Module",
    "evaluate",
    "from_list",
    "infer_module",
    "init_params",
    "to_list",
    "values_equal",
]
