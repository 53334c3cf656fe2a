"""IR types: tensors (shape + dtype), host scalars, tuples, ADTs and functions.

Shapes are concrete: symbolic sizes such as ``H`` are bound when the source is parsed,
so one source serves every size. A tensor type describes ONE instance's value; the
batch dimension only appears at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DTYPES = ("float32", "float64", "int32", "int64")


class Type:
    """Base class of IR types (frozen dataclasses, compared structurally)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A dense tensor of one instance; ``shape == ()`` is a 0-d tensor."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        suffix = "" if self.dtype == "float32" else f"; {self.dtype}"
        return f"Tensor[{dims}{suffix}]"

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of one value of this type."""
        return self.size * np.dtype(self.dtype).itemsize


@dataclass(frozen=True, slots=True)
class ScalarType(Type):
    """A host scalar: ``int``, ``bool`` or ``float``; lives in the host program, never on a device."""

    kind: str

    def __str__(self) -> str:
        return self.kind


INT = ScalarType("int")
BOOL = ScalarType("bool")
FLOAT = ScalarType("float")


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """A fixed-size tuple; ``TupleType(())`` is the unit type (what ``phase()`` returns)."""

    fields: tuple[Type, ...]

    def __str__(self) -> str:
        if len(self.fields) == 1:
            return f"({self.fields[0]},)"
        return "(" + ", ".join(str(f) for f in self.fields) + ")"


UNIT = TupleType(())


@dataclass(frozen=True, slots=True)
class AdtType(Type):
    """An algebraic data type, possibly applied to type arguments (``List[Tensor[4]]``)."""

    name: str
    args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}[" + ", ".join(str(a) for a in self.args) + "]"


@dataclass(frozen=True, slots=True)
class TypeParam(Type):
    """A type parameter of a generic ADT declaration (``T`` in ``List[T]``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    """The type of a global function value (used by ``map``)."""

    params: tuple[Type, ...]
    ret: Type

    def __str__(self) -> str:
        return "fn(" + ", ".join(str(p) for p in self.params) + f") -> {self.ret}"


def substitute(ty: Type, mapping: dict[str, Type]) -> Type:
    """Replace type parameters by name."""
    if isinstance(ty, TypeParam):
        return mapping.get(ty.name, ty)
    if isinstance(ty, TupleType):
        return TupleType(tuple(substitute(f, mapping) for f in ty.fields))
    if isinstance(ty, AdtType):
        return AdtType(ty.name, tuple(substitute(a, mapping) for a in ty.args))
    if isinstance(ty, FuncType):
        return FuncType(
            tuple(substitute(p, mapping) for p in ty.params), substitute(ty.ret, mapping)
        )
    return ty
