"""Adding an elementwise op in one call: :func:`define_elementwise_op`.

An op's facts live in three tables keyed by its name: the registry
(:data:`acrobat.ir.ops.REGISTRY`: type rule, FLOP rule, fusion kind, reference
implementation), the batched NumPy rules (:data:`~acrobat.codegen.numpy_kernels.NUMPY_RULES`)
and the CUDA rules (:data:`~acrobat.codegen.cuda_kernels.CUDA_RULES`). For an elementwise
(one tensor) or broadcasting (two tensors) op every entry follows from a NumPy function
and a C expression, so this one call writes all three::

    define_elementwise_op("square", numpy=np.square, cuda="({0} * {0})")

after which ``square(x)`` parses, type-checks, evaluates, fuses, and runs batched on
every backend. Ops of other kinds register a type rule with :func:`acrobat.ir.ops.register`
and one explicit rule in each table (``numpy_rule``, ``CUDA_RULES[name] = CudaRule(...)``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from acrobat.codegen import ident
from acrobat.codegen.cuda_kernels import CUDA_RULES, cuda_elementwise
from acrobat.codegen.numpy_kernels import NUMPY_RULES, numpy_elementwise
from acrobat.errors import AcrobatNameError, AcrobatTypeError
from acrobat.ir.ops import (
    REGISTRY,
    Op,
    OpKind,
    broadcast_type_rule,
    per_element,
    register,
    same_type_rule,
    unregister,
)


def define_elementwise_op(
    name: str,
    *,
    numpy: Callable[..., np.ndarray],
    cuda: str,
    arity: int = 1,
    impl: Callable[..., np.ndarray] | None = None,
    flops_per_element: int = 1,
    doc: str = "",
) -> Op:
    """Register the elementwise (``arity`` 1) or broadcasting (``arity`` 2) op ``name``.

    ``numpy``: the op on whole arrays (called once per batch on ``[B, ...]`` arrays; a
    ``np.ufunc`` also writes into the kernel's workspace through ``out=``). ``cuda``: a C
    expression of the operands' float values ``{0}`` (and ``{1}``) at one element.
    ``impl``: the per-instance reference semantics (default: ``numpy``).
    ``flops_per_element``: the FLOP rule. Returns the registered :class:`Op`; undo with
    :func:`remove_op`."""
    if not name.isidentifier() or name in REGISTRY:
        raise AcrobatNameError(
            f"cannot define op {name!r}: "
            + ("it is already registered" if name in REGISTRY else "not an identifier"),
            hint="op names are identifiers no other op uses",
        )
    if arity not in (1, 2):
        raise AcrobatTypeError(f"{name}: an elementwise op takes 1 or 2 tensors, not {arity}")
    try:
        cuda.format(*(["x"] * arity))
    except (IndexError, KeyError, ValueError) as err:
        raise AcrobatTypeError(
            f"{name}: the CUDA expression {cuda!r} is not a template of {arity} operand(s)",
            hint="write the operands as {0} and {1}, e.g. 'log1pf(expf({0}))'",
        ) from err
    kind = OpKind.ELEMWISE if arity == 1 else OpKind.BROADCAST
    type_rule = same_type_rule(name) if arity == 1 else broadcast_type_rule(name)
    doc = doc or f"{kind} {name}"
    register(name, arity, kind, impl or numpy, doc=doc, flops=per_element(flops_per_element))(
        type_rule
    )
    helper = ident("_op_", name)
    operands = ", ".join(f"{{{i}}}" for i in range(arity))
    takes_out = isinstance(numpy, np.ufunc)  # ufuncs write into a workspace buffer
    numpy_elementwise(
        name,
        f"{helper}({operands}{{out}})" if takes_out else f"{helper}({operands})",
        takes_out=takes_out,
        fresh=takes_out,  # another function might return an operand: never overwrite it
        helpers={helper: numpy},
    )
    cuda_elementwise(name, cuda)
    return REGISTRY[name]


def remove_op(name: str) -> None:
    """Remove an op and its rules (what :func:`define_elementwise_op` added)."""
    unregister(name)
    NUMPY_RULES.pop(name, None)
    CUDA_RULES.pop(name, None)


__all__ = ["define_elementwise_op", "remove_op"]
