"""A few bytes of source cannot make acrobat allocate gigabytes or hold a value no kernel can:
declared sizes, tensors and weights are capped, and non-finite constants are refused, each with
a typed error that names the limit or the line."""

import pytest

from acrobat.errors import AcrobatSyntaxError, AcrobatTypeError, SizeLimitError
from acrobat.frontend import parse
from acrobat.frontend.declarations import (
    MAX_INT,
    MAX_SIZE,
    MAX_TENSOR_ELEMENTS,
    MAX_WEIGHT_ELEMENTS,
)

MAIN = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x{}\n"


@pytest.mark.parametrize(
    ("declared", "limit"),
    [
        ("W: Param[2000000000]\n", MAX_SIZE),
        ("W: Param[60000, 60000]\n", MAX_TENSOR_ELEMENTS),
        ("A = 4096 * 4096\nW: Param[A]\n", MAX_SIZE),
        ('H = Size("H", 2000000)\n', MAX_SIZE),
        ("A = 65536 * 65536\nB = A * A\nC = B * B\n", MAX_INT),
        ("A: Param[8192, 8192]\nB: Param[8192, 8192]\nC: Param[8192, 8192]\n", MAX_WEIGHT_ELEMENTS),
    ],
)
def test_declarations_over_a_limit_are_refused_naming_it(declared, limit):
    with pytest.raises(SizeLimitError) as caught:
        parse(declared + MAIN.format(""))
    assert caught.value.limit == limit
    assert f"{limit:,}" in str(caught.value)
    assert caught.value.line is not None


def test_a_size_passed_in_is_capped_too():
    source = 'H = Size("H", 4)\ndef main(x: Tensor[H]) -> Tensor[H]:\n    return x\n'
    with pytest.raises(SizeLimitError, match="size H of 1,000,000,000,000 is over"):
        parse(source, sizes={"H": 10**12})
    assert parse(source, sizes={"H": MAX_SIZE}).sizes == (("H", MAX_SIZE),)


@pytest.mark.parametrize(
    ("source", "error", "line"),
    [
        ("INF = 1e999\n" + MAIN.format(" * INF"), AcrobatSyntaxError, 1),
        (MAIN.format(" * -1e999"), AcrobatSyntaxError, 2),
        (MAIN.format(" * (1e308 * 10.0)"), AcrobatTypeError, 2),
        (MAIN.format(" * (9 ** 9 ** 9)"), AcrobatTypeError, 2),
    ],
)
def test_constants_that_are_not_finite_floats_or_int64_are_refused(source, error, line):
    with pytest.raises(error) as caught:
        parse(source)
    assert caught.value.line == line


def test_a_program_too_long_is_refused_before_python_parses_it():
    from acrobat.frontend import MAX_SOURCE_LINES, MAX_SYNTAX_NODES

    body = "".join("    x = tanh(x) * 2.0\n" for _ in range(20_000))
    with pytest.raises(SizeLimitError, match="20,002 lines") as caught:
        parse(f"def main(x: Tensor[4]) -> Tensor[4]:\n{body}    return x\n")
    assert caught.value.limit == MAX_SOURCE_LINES
    dense = "".join("    x = tanh(x) * 2.0\n" for _ in range(3_000))  # few lines, many nodes
    with pytest.raises(SizeLimitError, match="syntax nodes") as caught:
        parse(f"def main(x: Tensor[4]) -> Tensor[4]:\n{dense}    return x\n")
    assert caught.value.limit == MAX_SYNTAX_NODES
