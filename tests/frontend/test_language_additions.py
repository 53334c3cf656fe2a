"""Language additions end to end: host constants, ``for x in xs``, ``len``, ``abs``/``min``/
``max`` on host scalars, and the errors for loop exits that stay unsupported.

Each program is checked against closed-form NumPy through ``acrobat.evaluate``, then run
batched under every policy, with every optimization on and with each one off, and must
equal the reference interpreter; its IR must verify and print/parse round-trip.
"""

import dataclasses
import textwrap

import numpy as np
import pytest

import acrobat
from acrobat import AcrobatNameError, AcrobatSyntaxError, AcrobatTypeError
from acrobat.ir.nodes import OpCall
from acrobat.ir.parser import parse_module
from acrobat.ir.traversal import walk
from acrobat.ir.verify import verify

POLICIES = ("acrobat", "eager", "dynet-depth", "dynet-agenda")
OPTIONS = [acrobat.CompileOptions()] + [
    acrobat.CompileOptions().without(f.name)
    for f in dataclasses.fields(acrobat.CompileOptions)
    if f.type in (bool, "bool")
]


def check(src, instances, sizes=None):
    """Parse, verify and round-trip ``src``; check batched runs equal ``evaluate``.

    Returns the module, its weights and the reference outputs.
    """
    m = acrobat.parse(textwrap.dedent(src), sizes=sizes)
    verify(m)
    assert parse_module(m.pretty()) == m
    params = acrobat.init_params(m, 0)
    want = [acrobat.evaluate(m, x, params) for x in instances]
    for opts in OPTIONS:
        prog = acrobat.compile(m, params, opts)
        for policy in POLICIES:
            got = acrobat.run(prog, instances, policy=policy).outputs
            for i, (a, b) in enumerate(zip(got, want)):
                assert acrobat.values_equal(a, b, rtol=1e-4, atol=1e-5), (opts, policy, i)
    return m, params, want


def vec(*xs):
    return np.array(xs, np.float32)


def bad(src, cls, marker="# <-"):
    """Parse ``src`` expecting ``cls`` at the line marked ``# <-``; return the error."""
    src = textwrap.dedent(src)
    line = next(i + 1 for i, text in enumerate(src.splitlines()) if marker in text)
    with pytest.raises(cls) as info:
        acrobat.parse(src, filename="bad.py")
    assert info.value.line == line, str(info.value)
    return info.value


# -- host constants ----------------------------------------------------------------------

CONSTANTS = """
H = Size("H", 3)
C = 2                      # a positive int stays a size
BOS = 0
NEG = -2
EPS = 1e-3
SCALE = -0.5
DEBUG = False
AXIS = -1
E: Param[C * H, H]

def main(x: Tensor[H], n: int) -> tuple[Tensor[H], int, float, bool]:
    y = embed(E, n + BOS) + x * SCALE
    if DEBUG:
        y = y + 1.0
    return softmax(y, AXIS), n * C + NEG, EPS * n, DEBUG or n > C
"""


def test_host_constants_match_numpy_and_batch():
    instances = [(vec(k, -k, 0.5), k) for k in range(5)]
    m, p, want = check(CONSTANTS, instances)
    assert dict(m.sizes) == {"H": 3, "C": 2}
    for (x, n), (y, code, scaled, flag) in zip(instances, want):
        z = p["E"][n] - 0.5 * x
        e = np.exp(z - z.max())
        np.testing.assert_allclose(y, e / e.sum(), rtol=1e-5)
        assert (code, flag) == (2 * n - 2, n > 2)
        assert scaled == pytest.approx(1e-3 * n)


def test_sizes_override_only_sizes():
    m = acrobat.parse(CONSTANTS, sizes={"C": 3})
    assert m.param_map["E"].ty.shape == (9, 3)
    with pytest.raises(AcrobatNameError, match="EPS is a host constant, not a size"):
        acrobat.parse(CONSTANTS, sizes={"EPS": 3})


@pytest.mark.parametrize(
    "use",
    [
        "W: Param[EPS, H]  # <-",
        "F = 2 * BOS  # <-",
        "def f(x: Tensor[BOS]) -> Tensor[H]:  # <-\n    return x",
    ],
)
def test_host_constant_as_a_dimension_is_a_typed_error(use):
    src = f"""\
H = Size("H", 3)
BOS = 0
EPS = 1e-3
{use}
def main(x: Tensor[H]) -> Tensor[H]:
    return x
"""
    err = bad(src, AcrobatTypeError)
    assert "host constant, not a size" in err.message
    assert "Size(" in err.hint


# -- len, abs, min, max on host values ----------------------------------------------------

BUILTINS = """
H = Size("H", 3)

def main(x: Tensor[H], n: int, f: float, xs: List[Tensor[H]]) -> tuple[
    int, float, int, float, float, int, Tensor[()], Tensor[H], Tensor[H]
]:
    k = len(xs)
    return (
        abs(n - 3),
        abs(f),
        min(n, k, 2),
        max(n, f),
        max(3, 2.0),
        max(n - k, -n),
        max(x),
        max(x, 0) * x,
        x * max(2, 3),
    )
"""


def test_host_builtins_match_python_and_batch():
    instances = [
        (vec(k, -k, 0.5), k, 1.5 - k, acrobat.from_list([vec(1, 2, 3)] * (k % 3))) for k in range(5)
    ]
    m, _, want = check(BUILTINS, instances)
    ops = {e.op for f in m.functions for e in walk(f.body) if isinstance(e, OpCall)}
    assert {"h.len", "h.abs", "h.min", "h.max", "max"} <= ops
    for (x, n, f, xs), got in zip(instances, want):
        k = len(acrobat.to_list(xs))
        host = (abs(n - 3), abs(f), min(n, k, 2), float(max(n, f)), 3.0, max(n - k, -n))
        assert got[:6] == host
        assert [type(v) for v in got[:6]] == [int, float, int, float, float, int]
        np.testing.assert_allclose(got[6], x.max())
        np.testing.assert_allclose(got[7], x.max() * x)
        np.testing.assert_allclose(got[8], 3 * x)


@pytest.mark.parametrize(
    "call, accepts, fix",
    [
        ("abs(x)", "one host int or float", "maximum(x, neg(x))"),
        ("abs(n, n)", "one host int or float", "maximum(x, neg(x))"),
        ("min(n)", "two or more host ints/floats", "minimum(a, b)"),
        ("min(True, n)", "two or more host ints/floats", "minimum(a, b)"),
        ("max(n, x)", "or a tensor to reduce", "maximum(a, b)"),
        ("max(n)", "two or more host ints/floats", "max(x, axis)"),
        ("len(n)", "one List", "List[T]"),
        ("len(x)", "one List", "List[T]"),
    ],
)
def test_host_builtins_with_wrong_arguments_say_what_they_accept(call, accepts, fix):
    src = f"""\
H = Size("H", 3)
def main(x: Tensor[H], n: int) -> int:
    y = {call}  # <-
    return n
"""
    err = bad(src, AcrobatTypeError)
    assert accepts in err.message
    assert fix in err.hint


def test_builtin_names_are_reserved():
    bad("def len(n: int) -> int:  # <-\n    return n\n", AcrobatNameError)
