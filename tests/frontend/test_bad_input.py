"""Every unsupported or ill-typed program gives a typed error at the right line.

Each case marks the offending line with ``# <-``; the test asserts the error class and
that the error's line is that line.
"""

import contextlib

import pytest

import acrobat
from acrobat import (
    AcrobatMatchError,
    AcrobatNameError,
    AcrobatPhaseError,
    AcrobatShapeError,
    AcrobatSyntaxError,
    AcrobatTypeError,
)

HEAD = """\
H = Size("H", 4)
W: Param[H, H]
class Tree(ADT):
    Leaf: (Tensor[H],)
    Node: (Tree, Tree)
"""

CASES = {
    "import": (
        AcrobatSyntaxError,
        "import os  # <-\ndef main(x: Tensor[H]) -> Tensor[H]:\n    return x",
    ),
    "import_in_body": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    import os  # <-\n    return x",
    ),
    "for_over_object": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    for y in x:  # <-\n        x = y\n    return x",
    ),
    "while_true": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    while True:  # <-\n        x = tanh(x)\n    return x",
    ),
    "attribute": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return np.tanh(x)  # <-",
    ),
    "lambda": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    f = lambda y: y  # <-\n    return x",
    ),
    "global": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    global W  # <-\n    return x",
    ),
    "unknown_op": (
        AcrobatNameError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return frobnicate(x)  # <-",
    ),
    "wrong_arity": (
        AcrobatTypeError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return sigmoid(x, x)  # <-",
    ),
    "wrong_function_arity": (
        AcrobatTypeError,
        "def f(x: Tensor[H]) -> Tensor[H]:\n    return x\n"
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return f(x, x)  # <-",
    ),
    "shape_mismatch": (
        AcrobatShapeError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    y = concat(x, x)\n    return dense(y, W)  # <-",
    ),
    "broadcast_mismatch": (
        AcrobatShapeError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return x + concat(x, x)  # <-",
    ),
    "result_shape_mismatch": (
        AcrobatShapeError,
        "def main(x: Tensor[H]) -> Tensor[H]:  # <-\n    return concat(x, x)",
    ),
    "missing_param_annotation": (
        AcrobatTypeError,
        "def main(x) -> Tensor[H]:  # <-\n    return x",
    ),
    "missing_result_annotation": (
        AcrobatTypeError,
        "def main(x: Tensor[H]):  # <-\n    return x",
    ),
    "non_exhaustive_match": (
        AcrobatMatchError,
        "def main(t: Tree) -> Tensor[H]:\n    match t:  # <-\n        case Leaf(x):\n            return x",
    ),
    "non_exhaustive_nested": (
        AcrobatMatchError,
        "def main(t: Tree) -> Tensor[H]:\n    match t:  # <-\n        case Leaf(x):\n"
        "            return x\n        case Node(Leaf(y), _):\n            return y",
    ),
    "undefined_function": (
        AcrobatNameError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return helper(x)  # <-",
    ),
    "undefined_variable": (
        AcrobatNameError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return tanh(z)  # <-",
    ),
    "phase_in_helper": (
        AcrobatPhaseError,
        "def f(x: Tensor[H]) -> Tensor[H]:\n    phase()  # <-\n    return x\n"
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return f(x)",
    ),
    "phase_in_branch": (
        AcrobatPhaseError,
        "def main(x: Tensor[H], n: int) -> Tensor[H]:\n    if n > 0:\n        phase()  # <-\n"
        "        x = tanh(x)\n    return x",
    ),
    "phase_in_expression": (
        AcrobatPhaseError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    y = phase()  # <-\n    return x",
    ),
    "tensor_compare": (
        AcrobatTypeError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    if x > 0.5:  # <-\n        return x\n    return x",
    ),
    "if_on_int": (
        AcrobatTypeError,
        "def main(x: Tensor[H], n: int) -> Tensor[H]:\n    if n:  # <-\n        return x\n    return x",
    ),
    "missing_return": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    y = tanh(x)  # <-",
    ),
    "python_syntax_error": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return x +* 2  # <-",
    ),
    "list_literal": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    y = [x, x]  # <-\n    return x",
    ),
    "unknown_type": (
        AcrobatNameError,
        "def main(x: Matrix[H]) -> Tensor[H]:  # <-\n    return x",
    ),
    "duplicate_definition": (
        AcrobatNameError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return x\ndef main(x: Tensor[H]) -> Tensor[H]:  # <-\n"
        "    return x",
    ),
    "unreachable": (
        AcrobatSyntaxError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return x\n    y = x  # <-",
    ),
    "unknown_attribute": (
        AcrobatTypeError,
        "def main(x: Tensor[H]) -> Tensor[H]:\n    return softmax(x, dim=0)  # <-",
    ),
}


def expected_line(body: str) -> int:
    lines = (HEAD + body).splitlines()
    return next(i + 1 for i, line in enumerate(lines) if "# <-" in line)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_program_raises_typed_error_at_line(name):
    cls, body = CASES[name]
    with pytest.raises(cls) as info:
        acrobat.parse(HEAD + body, filename="bad.py")
    err = info.value
    assert err.line == expected_line(body), str(err)
    assert err.span.file == "bad.py"
    assert f"bad.py:{err.line}:" in str(err)


def test_no_main():
    with pytest.raises(AcrobatNameError, match="main"):
        acrobat.parse(HEAD + "def f(x: Tensor[H]) -> Tensor[H]:\n    return x\n")


def test_unbound_and_unknown_sizes():
    with pytest.raises(AcrobatNameError, match="not bound") as info:
        acrobat.parse('H = Size("H")\ndef main(x: Tensor[H]) -> Tensor[H]:\n    return x\n')
    assert info.value.line == 1 and "sizes=" in info.value.hint
    with pytest.raises(AcrobatNameError, match="HH"):
        acrobat.parse(
            HEAD + "def main(x: Tensor[H]) -> Tensor[H]:\n    return x\n", sizes={"HH": 3}
        )


def test_generic_needs_annotation():
    src = HEAD + ("def main(x: Tensor[H]) -> Tensor[H]:\n    xs = Nil()  # <-\n    return x\n")
    with pytest.raises(AcrobatTypeError, match="cannot infer") as info:
        acrobat.parse(src)
    assert info.value.line == expected_line(src[len(HEAD) :])


ATTACKS = [
    '__import__("os").system("touch {s}")',
    'open("{s}", "w")',
    "exec(\"open('{s}', 'w')\")",
    "eval(\"__import__('os').system('touch {s}')\")",
    'getattr(__builtins__, "open")("{s}", "w")',
]


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("where", ["module", "body", "default", "annotation"])
def test_code_in_source_is_never_run(tmp_path, attack, where):
    sentinel = tmp_path / "SENTINEL"
    call = attack.format(s=sentinel)
    src = {
        "module": f"{call}\ndef main(x: int) -> int:\n    return x\n",
        "body": f"def main(x: int) -> int:\n    y = {call}\n    return x\n",
        "default": f"def main(x: int = {call}) -> int:\n    return x\n",
        "annotation": f"def main(x: {call}) -> int:\n    return x\n",
    }[where]
    with pytest.raises(acrobat.AcrobatError):
        acrobat.parse(src)
    assert not sentinel.exists()


def test_module_level_code_rejected_with_line():
    src = 'H = Size("H", 4)\nimport os\nos.system("true")\n'
    with pytest.raises(AcrobatSyntaxError) as info:
        acrobat.parse(src)
    assert info.value.line == 2


@pytest.mark.parametrize(
    "expr", ["-" * 100_000 + "x", " + ".join(["x"] * 5000), "(" * 300 + "x" + ")" * 300]
)
def test_huge_or_deep_expressions_give_typed_errors(expr):
    src = f"def main(x: float) -> float:\n    return {expr}\n"
    # a module or a typed error are both fine; any other exception fails the test
    with contextlib.suppress(acrobat.AcrobatError):
        acrobat.parse(src)


def test_undeclared_sizes_are_named_in_a_field():
    """Callers (the explorer) read which sizes were not declared from ``names``."""
    src = "H = Size('H', 4)\ndef main(x: Tensor[H]) -> Tensor[H]:\n    return x\n"
    with pytest.raises(acrobat.UndeclaredSizeError) as e:
        acrobat.parse(src, sizes={"H": 2, "Q": 3, "B": 1})
    assert isinstance(e.value, AcrobatNameError)
    assert e.value.names == ("B", "Q")
    assert "declared sizes: ['H']" in e.value.hint
