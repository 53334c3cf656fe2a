"""Type inference and the verifier on hand-built IR."""

import dataclasses

import pytest

import acrobat
from acrobat.errors import AcrobatMatchError, AcrobatShapeError, VerificationError
from acrobat.ir.nodes import (
    Binding,
    Clause,
    Const,
    Function,
    Let,
    Match,
    Module,
    OpCall,
    ParamDef,
    PCtor,
    Phase,
    PVar,
    TupleExpr,
    Var,
)
from acrobat.ir.typecheck import infer_module, missing_case
from acrobat.ir.types import UNIT, AdtType, TensorType
from acrobat.ir.verify import verify

T4 = TensorType((4,))
X = (Var("x", ty=T4),)


def module(body, params=(), ret=T4, args=X):
    fn = Function("main", tuple(args), ret, body)
    return Module((), tuple(params), (), (fn,))


def test_inference_fills_types():
    body = OpCall(
        "tanh",
        (
            OpCall(
                "add",
                (Var("x"), Const(1.0, ty=TensorType(()))),
            ),
        ),
    )
    m = infer_module(module(body))
    assert m.main.body.ty == T4
    assert m.main.body.args[0].args[1].ty == TensorType(())
    verify(m)


def test_shape_error_from_shape_rule():
    body = OpCall("dense", (Var("x"), Var("x")))
    with pytest.raises(AcrobatShapeError, match="dense"):
        infer_module(module(body))


def test_verify_rejects_wrong_stored_type():
    m = infer_module(module(OpCall("tanh", (Var("x"),))))
    bad_body = dataclasses.replace(m.main.body, ty=TensorType((5,)))
    bad = dataclasses.replace(m, functions=(dataclasses.replace(m.main, body=bad_body),))
    with pytest.raises(VerificationError):
        verify(bad)


def test_verify_anf():
    nested = infer_module(module(OpCall("tanh", (OpCall("exp", (Var("x"),)),))))
    verify(nested)
    with pytest.raises(VerificationError, match="ANF"):
        verify(nested, anf=True)
    flat = Let((Binding(Var("y"), OpCall("exp", (Var("x"),))),), OpCall("tanh", (Var("y"),)))
    verify(infer_module(module(flat)), anf=True)


def test_verify_rejects_nested_phase():
    inner = Let((Binding(Var("p"), Phase()),), Var("x"))
    body = Let((Binding(Var("y"), inner),), Var("y"))
    m = infer_module(module(body))
    with pytest.raises(VerificationError, match="phase"):
        verify(m)
    top = infer_module(module(Let((Binding(Var("p", ty=UNIT), Phase()),), Var("x"))))
    verify(top)


def test_double_binding_rejected():
    body = Let((Binding(Var("y"), Var("x")), Binding(Var("y"), Var("x"))), Var("y"))
    with pytest.raises(acrobat.AcrobatNameError, match="twice"):
        infer_module(module(body))


def test_missing_case_witness():
    m = acrobat.parse(
        "class T(ADT):\n    A: (int,)\n    B: (T, T)\n"
        "def main(t: T) -> int:\n    match t:\n        case A(x):\n            return x\n"
        "        case B(A(_), _):\n            return 1\n        case B(B(_, _), _):\n"
        "            return 2\n"
    )
    t = AdtType("T")
    pats = [c.pattern for c in m.main.body.clauses]
    assert missing_case(m, t, pats) is None
    assert missing_case(m, t, pats[:2]) == "B(B(_, _), _)"
    assert missing_case(m, t, []) == "_"


def test_match_on_non_adt():
    body = Match(Var("x"), (Clause(PVar(Var("y")), Var("y")),))
    with pytest.raises(AcrobatMatchError):
        infer_module(module(body))
    body = Match(Var("x"), (Clause(PCtor("Nope", ()), Var("x")),))
    with pytest.raises(acrobat.AcrobatError):
        infer_module(module(body))


def test_param_types():
    m = infer_module(
        module(
            OpCall("dense", (Var("x"), acrobat.ir.nodes.ParamRef("W"))),
            params=(ParamDef("W", TensorType((3, 4))),),
            ret=TensorType((3,)),
        )
    )
    assert m.main.body.ty == TensorType((3,))
    assert TupleExpr(()) == TupleExpr(())
