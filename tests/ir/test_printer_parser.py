"""The IR text form: ``parse_module(print_module(m)) == m``, canonical golden texts, errors."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from acrobat.errors import AcrobatTypeError, IRParseError
from acrobat.ir.nodes import (
    AdtDef,
    Binding,
    Clause,
    Const,
    CtorCall,
    CtorDef,
    FnCall,
    Function,
    GlobalRef,
    If,
    Let,
    Match,
    Module,
    OpCall,
    ParamDef,
    ParamRef,
    PCtor,
    Phase,
    Proj,
    PVar,
    PWild,
    TupleExpr,
    Var,
)
from acrobat.ir.parser import parse_expr, parse_module
from acrobat.ir.printer import print_expr, print_module, print_type
from acrobat.ir.typecheck import infer_module
from acrobat.ir.types import (
    BOOL,
    FLOAT,
    INT,
    UNIT,
    AdtType,
    FuncType,
    TensorType,
    TupleType,
    TypeParam,
)
from tests.ir.strategies import modules

GOLDEN = Path(__file__).parent / "golden"
TREE = AdtType("Tree")
H = TensorType((8,))


def roundtrip(m: Module) -> Module:
    """Print, parse back, and check equality; returns the parsed module."""
    back = parse_module(print_module(m))
    assert back == m
    return back


# -- round trips ---------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_random_modules_roundtrip(m):
    back = roundtrip(m)
    assert print_module(back) == print_module(m)


@pytest.mark.parametrize("name", ["cell.ir", "all_syntax.ir"])
def test_golden_text_is_canonical(name):
    text = (GOLDEN / name).read_text()
    m = parse_module(text, filename=name)
    assert print_module(m) == text
    roundtrip(m)


def _tree_adts() -> tuple[AdtDef, ...]:
    tree = AdtDef("Tree", (), (CtorDef("Leaf", (INT,)), CtorDef("Node", (TREE, TREE))))
    list_t = AdtType("List", (TypeParam("T"),))
    lst = AdtDef("List", ("T",), (CtorDef("Nil", ()), CtorDef("Cons", (TypeParam("T"), list_t))))
    return tree, lst


def cell_module() -> Module:
    """The module of ``golden/cell.ir``, built from nodes."""
    word, x, p = (
        Var("word", ty=INT),
        Var("x", ty=TensorType((24,))),
        Var("p", ty=TupleType((H,) * 3)),
    )
    leaf_body = Let(
        (
            Binding(
                x, OpCall("dense", (OpCall("embed", (ParamRef("E"), Var("word"))), ParamRef("W")))
            ),
            Binding(p, OpCall("split", (Var("x"),), (("sections", 3),))),
        ),
        TupleExpr((Proj(Var("p"), 0), OpCall("sigmoid", (Proj(Var("p"), 1),)))),
    )
    cell_body = Match(
        Var("t"),
        (
            Clause(PCtor("Leaf", (PVar(word),)), leaf_body),
            Clause(PCtor("Node", (PVar(Var("l", ty=TREE)), PWild())), FnCall("cell", (Var("l"),))),
        ),
    )
    pair = TupleType((H, H))
    main_body = Let(
        (
            Binding(Var("r", ty=pair), FnCall("cell", (Var("t"),))),
            Binding(Var("_1", ty=UNIT), Phase()),
        ),
        Proj(Var("r"), 0),
    )
    return Module(
        (("H", 8), ("V", 100)),
        (ParamDef("E", TensorType((100, 8))), ParamDef("W", TensorType((24, 8)))),
        _tree_adts(),
        (
            Function("cell", (Var("t", ty=TREE),), pair, cell_body),
            Function("main", (Var("t", ty=TREE),), H, main_body),
        ),
    )


def test_hand_built_module_prints_as_golden():
    m = infer_module(cell_module())
    assert print_module(m) == (GOLDEN / "cell.ir").read_text()
    assert parse_module(print_module(m)) == m


def edge_module() -> Module:
    """Lets without bindings, lets in lets, projections of compound values, odd names,
    special floats, attributes of every kind, function-typed variables."""
    v = Var("a b", ty=FLOAT)
    flt = Let(
        (Binding(v, Const(float("-inf"))), Binding(Var("z", ty=FLOAT), Const(-0.0))),
        Let((), OpCall("h.add", (Var("a b"), Const(1e-300)))),
    )
    attrs = OpCall(
        "sum",
        (OpCall("reshape", (OpCall("zeros", (), (("shape", (6,)),)),), (("shape", (-1, 3)),)),),
        (("axis", -1), ("keepdims", True)),
    )
    pick = Proj(If(Const(True), TupleExpr((attrs,)), TupleExpr((attrs,))), 0)
    scrut = CtorCall("Nil", (), ty=AdtType("List", (INT,)))
    matched = Match(
        scrut,
        (
            Clause(PCtor("Cons", (PVar(Var("hd", ty=INT)), PWild())), Var("hd")),
            Clause(PWild(), Const(-3)),
        ),
    )
    body = Let(
        (
            Binding(Var("f", ty=FuncType((TREE,), FLOAT)), GlobalRef("g.1")),
            Binding(Var("s", ty=TensorType((2, 1))), pick),
            Binding(Var("n", ty=INT), matched),
            Binding(Var("e", ty=TensorType((), "int32")), Const(7, ty=TensorType((), "int32"))),
            Binding(Var("u", ty=TensorType(())), OpCall("mean", (Var("s"),), (("axis", None),))),
        ),
        Proj(TupleExpr((flt, Var("n"))), 0),
    )
    g = Function("g.1", (Var("t", ty=TREE),), FLOAT, Let((), Const(2.5)))
    main = Function("main", (), FLOAT, body)
    return Module((), (ParamDef("w/1", TensorType((2,))),), _tree_adts(), (g, main), entry="main")


def test_hand_built_edge_cases_roundtrip():
    m = infer_module(edge_module())
    text = print_module(m)
    assert 'let %"a b": float = -inf;' in text
    assert "match (Nil[int]()) {" in text
    assert "keepdims=true" in text and "axis=none" in text and "shape=(6,)" in text
    assert 'param "w/1": Tensor[2]' in text and "tensor(7: Tensor[; int32])" in text
    roundtrip(m)


def test_entry_line_only_when_not_main():
    m = infer_module(cell_module())
    assert "entry" not in print_module(m)
    fns = tuple(
        Function("go" if f.name == "main" else f.name, f.params, f.ret, f.body) for f in m.functions
    )
    other = infer_module(Module(m.sizes, m.params, m.adts, fns, entry="go"))
    assert print_module(other).splitlines()[1] == "entry @go"
    roundtrip(other)


def test_long_let_block_is_flat():
    n = 2000
    bindings = [Binding(Var("x0", ty=INT), Const(0))]
    bindings += [
        Binding(Var(f"x{i}", ty=INT), OpCall("h.add", (Var(f"x{i - 1}"), Const(1))))
        for i in range(1, n)
    ]
    main = Function("main", (), INT, Let(tuple(bindings), Var(f"x{n - 1}")))
    m = infer_module(Module((), (), (), (main,)))
    start = time.perf_counter()
    text = print_module(m)
    back = parse_module(text)
    assert back == m
    assert len(text.splitlines()) == n + 4
    assert time.perf_counter() - start < 10


# -- pieces --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ty, text",
    [
        (TensorType(()), "Tensor[]"),
        (TensorType((2, 3)), "Tensor[2, 3]"),
        (TensorType((4,), "int32"), "Tensor[4; int32]"),
        (TensorType((), "float64"), "Tensor[; float64]"),
        (TupleType((INT,)), "(int,)"),
        (UNIT, "()"),
        (TupleType((BOOL, FLOAT)), "(bool, float)"),
        (AdtType("List", (AdtType("List", (TypeParam("T"),)),)), "List[List[T]]"),
        (FuncType((INT, TREE), FuncType((), UNIT)), "fn(int, Tree) -> fn() -> ()"),
    ],
)
def test_print_type(ty, text):
    assert print_type(ty) == text
    assert print_type(ty) == str(ty)


def test_expression_roundtrip_with_strings_and_untyped_binders():
    e = Let(
        (
            Binding(
                Var("x"),
                OpCall(
                    "op",
                    (Const(1),),
                    (("mode", 'say "hi"\n'), ("nest", ((1, -2), (), (None, 2.5)))),
                ),
            ),
        ),
        Proj(TupleExpr((Var("x"),)), 0),
    )
    text = print_expr(e)
    assert 'mode="say \\"hi\\"\\n"' in text and "let %x = op(" in text
    assert parse_expr(text) == e


def test_print_expr_without_module_writes_nullary_type_args():
    nil = CtorCall("Nil", (), ty=AdtType("List", (H,)))
    assert print_expr(nil) == "Nil[Tensor[8]]()"
    m = infer_module(cell_module())
    assert parse_expr(print_expr(nil), module=m) == nil


def test_comments_and_blank_lines_are_ignored():
    text = (GOLDEN / "cell.ir").read_text().replace("\n", "  # note\n\n")
    assert parse_module(text) == parse_module((GOLDEN / "cell.ir").read_text())


# -- errors --------------------------------------------------------------------------

SMALL = """\
size H = 2
def @main(%x: Tensor[2]) -> Tensor[2] {
  let %y: Tensor[2] = sigmoid(%x);
  %y
}
"""


def _with_line(n: int, new: str) -> str:
    lines = SMALL.splitlines()
    lines[n - 1] = new
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, line, words",
    [
        (_with_line(3, "  let %y: Tensor[2] = sigmoid(%x) ? 1;"), 3, "unexpected character"),
        (SMALL.replace("  %y\n}", "  %y\n"), 2, "never closed"),
        (SMALL + "}\n", 6, "unmatched"),
        (_with_line(3, "  let %y: Tensor[2] = sigmoid(%x};"), 3, "does not close"),
        (_with_line(2, "def @main(%x: Tensr[2]) -> Tensor[2] {"), 2, "unknown type name"),
        (_with_line(3, "  let %y: Tensor[2; int8] = sigmoid(%x);"), 3, "unknown dtype"),
        (_with_line(3, "  let %y: Tensor[2] = sigmoid(%x)"), 4, "expected ';'"),
        (_with_line(1, "sizes H = 2"), 1, "unknown declaration"),
    ],
)
def test_parse_errors_say_where(text, line, words):
    with pytest.raises(IRParseError) as info:
        parse_module(text, filename="m.ir")
    assert info.value.line == line
    assert words in info.value.message
    assert str(info.value).startswith(f"m.ir:{line}:")
    assert info.value.hint


def test_unknown_op_is_a_type_error_with_its_line():
    with pytest.raises(AcrobatTypeError) as info:
        parse_module(_with_line(3, "  let %y: Tensor[2] = sigmoidal(%x);"), filename="m.ir")
    assert info.value.line == 3
    assert "unknown op" in info.value.message
