"""The IR verifier: the invariants every pass must keep.

* types: re-running inference over the module reproduces exactly the stored types
  (so shapes agree with every op's shape rule and every annotation);
* scoping: each variable is bound once per function and used only after its binding
  (inference rejects both);
* matches are exhaustive;
* ``phase()`` appears only in the top-level bindings of the entry function;
* with ``anf=True``: every op/function/constructor argument is an atom.
"""

from __future__ import annotations

from acrobat.errors import AcrobatError, VerificationError
from acrobat.ir.nodes import (
    ATOMS,
    CtorCall,
    FnCall,
    Let,
    Map,
    Module,
    OpCall,
    Phase,
    Proj,
    TupleExpr,
)
from acrobat.ir.traversal import walk
from acrobat.ir.typecheck import infer_module


def verify(m: Module, anf: bool = False) -> None:
    """Raise :class:`VerificationError` naming the first broken invariant."""
    try:
        checked = infer_module(m)
    except AcrobatError as err:
        raise VerificationError(f"type check failed: {err.message}", err.span, err.hint) from None
    for f, g in zip(m.functions, checked.functions):
        if f != g:
            raise VerificationError(f"stored types in {f.name} differ from inferred ones", f.span)
    for f in m.functions:
        allowed = set()
        if f.name == m.entry and isinstance(f.body, Let):
            allowed = {id(b.value) for b in f.body.bindings if isinstance(b.value, Phase)}
        for e in walk(f.body):
            if isinstance(e, Phase) and id(e) not in allowed:
                raise VerificationError(
                    f"phase() inside {f.name} is not at the top level of {m.entry}", e.span
                )
            if anf:
                _check_anf(f.name, e)


def _check_anf(fn: str, e) -> None:
    if isinstance(e, (OpCall, FnCall, CtorCall, TupleExpr)):
        args = e.fields if isinstance(e, TupleExpr) else e.args
        for a in args:
            if type(a) not in ATOMS:
                raise VerificationError(
                    f"{fn}: argument {type(a).__name__} is not an atom (ANF)", e.span
                )
    elif isinstance(e, Proj) and type(e.tup) not in ATOMS:
        raise VerificationError(f"{fn}: projection of a non-atom (ANF)", e.span)
    elif isinstance(e, Map) and any(type(a) not in ATOMS for a in (e.xs, *e.extra)):
        raise VerificationError(f"{fn}: map argument is not an atom (ANF)", e.span)
