"""Generic functions: one copy per argument types (monomorphization).

``def length(xs: List[T]) -> int`` with ``T = TypeVar("T")`` is not lowered as it stands:
each call with arguments of new types (``length(words)`` with ``words: List[int]``) makes
``length__<k>``, the same body with ``T`` bound to ``int``, and calls it; further calls with
the same types reuse it. So the IR, the compiler and every runtime path only ever see
functions of concrete types. The type variables may appear in the signature (parameters and
result); the body's own annotations name concrete types.
"""

from __future__ import annotations

import ast
import copy

from acrobat.errors import AcrobatTypeError
from acrobat.ir.typecheck import _has_meta
from acrobat.ir.types import AdtType, TupleType, Type, TypeParam, substitute


def type_params_of(ty: Type) -> set[str]:
    """The type variables ``ty`` names."""
    if isinstance(ty, TypeParam):
        return {ty.name}
    if isinstance(ty, AdtType):
        return set().union(*(type_params_of(a) for a in ty.args))
    if isinstance(ty, TupleType):
        return set().union(*(type_params_of(f) for f in ty.fields))
    return set()


def bind(pattern: Type, actual: Type, subst: dict[str, Type]) -> bool:
    """Extend ``subst`` so that ``pattern`` with it is ``actual``; False if it cannot."""
    if isinstance(pattern, TypeParam):
        return subst.setdefault(pattern.name, actual) == actual
    if isinstance(pattern, AdtType):
        return (
            isinstance(actual, AdtType)
            and actual.name == pattern.name
            and len(actual.args) == len(pattern.args)
            and all(bind(p, a, subst) for p, a in zip(pattern.args, actual.args))
        )
    if isinstance(pattern, TupleType):
        return (
            isinstance(actual, TupleType)
            and len(actual.fields) == len(pattern.fields)
            and all(bind(p, a, subst) for p, a in zip(pattern.fields, actual.fields))
        )
    return pattern == actual


class GenericCalls:
    """Mixin of the function lowerer: calls of generic functions go to their copy for the
    arguments' types. Needs ``decl`` (``generics``: name -> Signature, ``instances``:
    (name, types) -> copy's name), ``sigs``, ``type_of``, ``span`` and ``register``."""

    def instance_of(self, name: str, arg_types: list[Type], node: ast.AST) -> str:
        """The copy of generic function ``name`` for arguments of ``arg_types``."""
        sig = self.decl.generics[name]
        subst: dict[str, Type] = {}
        fits = len(arg_types) == len(sig.params) and all(
            not _has_meta(a) and bind(t, a, subst) for (_, t), a in zip(sig.params, arg_types)
        )
        unbound = type_params_of(sig.ret) - set(subst)
        if not fits or unbound:
            want = ", ".join(str(t) for _, t in sig.params)
            got = ", ".join(str(t) for t in arg_types)
            raise AcrobatTypeError(
                f"generic function {name}({want}) cannot take ({got})",
                self.span(node),
                hint="the arguments' types must fit the parameters' with one type per "
                "type variable, and each variable must appear in a parameter",
            )
        key = (name, tuple(arg_types))
        copy_name = self.decl.instances.get(key)
        if copy_name is None:
            k = 1
            while f"{name}__{k}" in self.decl.functions:
                k += 1
            copy_name = f"{name}__{k}"
            self.decl.instances[key] = copy_name
            params = [(n, substitute(t, subst)) for n, t in sig.params]
            body = copy.deepcopy(sig.body)
            self.register(type(sig)(copy_name, params, substitute(sig.ret, subst), body, sig.node))
        return copy_name
