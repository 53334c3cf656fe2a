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

POLICIES = tuple(p.name for p in acrobat.policies())
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


# -- for x in xs over a List ---------------------------------------------------------------

FOR_LIST = """
H = Size("H", 3)
Wx: Param[H, H]
Wh: Param[H, H]

def main(
    xs: List[Tensor[H]], h: Tensor[H], ps: List[tuple[int, float]], nss: List[List[int]]
) -> tuple[Tensor[H], int, float, int, List[Tensor[H]], int, int]:
    count = 0
    outs: List[Tensor[H]] = Nil()
    for x in xs:                       # an RNN over the list, the state carried
        h = tanh(dense(x, Wx) + dense(h, Wh))
        outs = Cons(h, outs)
        count += 1
    total = 0.0
    best = 0
    for k, w in ps:                    # a tuple target
        total += w * k
        best = max(best, k)
    nested = 0
    for ns in nss:                     # loops in a loop's body
        for n in ns:
            for i in range(n):
                nested += i
        nested += len(ns)
    last = -1
    for last in ps_keys(ps):           # an existing target holds the last item afterwards
        nested += 0
    return h, count, total, best, outs, nested, last

def ps_keys(ps: List[tuple[int, float]]) -> List[int]:
    keys: List[int] = Nil()
    for k, _ in ps:
        keys = Cons(k, keys)
    return keys
"""


def test_for_over_a_list_matches_numpy_and_batch():
    rng = np.random.default_rng(0)
    F = acrobat.from_list
    instances = [
        (
            F([rng.standard_normal(3).astype(np.float32) for _ in range(k)]),
            rng.standard_normal(3).astype(np.float32),
            F([(j, 0.5 * j) for j in range(k)]),
            F([F(list(range(j))) for j in range(k)]),
        )
        for k in range(5)
    ]
    m, p, want = check(FOR_LIST, instances)
    assert {"main_loop1", "main_loop3_loop1", "main_loop3_loop1_loop1"} <= set(m.function_map)
    for (xs, h, ps, nss), got in zip(instances, want):
        outs = []
        for x in acrobat.to_list(xs):
            h = np.tanh(p["Wx"] @ x + p["Wh"] @ h)
            outs.insert(0, h)
        np.testing.assert_allclose(got[0], h, rtol=1e-5)
        pairs = acrobat.to_list(ps)
        nested = sum(
            sum(range(n)) for ns in acrobat.to_list(nss) for n in acrobat.to_list(ns)
        ) + sum(len(acrobat.to_list(ns)) for ns in acrobat.to_list(nss))
        assert got[1:4] == (
            len(outs),
            sum(w * k for k, w in pairs),
            max([0] + [k for k, _ in pairs]),
        )
        for a, b in zip(acrobat.to_list(got[4]), outs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5)
        assert got[5] == nested
        assert got[6] == (pairs[0][0] if pairs else -1)  # ps_keys reverses the keys


LIST_LOOP_IN_WHILE = """
def main(xs: List[int], n: int) -> int:
    total = 0
    while n > 0:
        for x in xs:
            total += abs(x) * n
        n -= 1
    return total
"""


def test_list_loop_inside_a_while():
    instances = [(acrobat.from_list(list(range(-k, k))), k) for k in range(5)]
    _, _, want = check(LIST_LOOP_IN_WHILE, instances)
    assert want == [sum(abs(x) for x in range(-k, k)) * k * (k + 1) // 2 for k in range(5)]


def test_list_loop_target_is_not_defined_after_an_empty_list():
    bad(
        """\
        def main(xs: List[int]) -> int:
            for x in xs:
                pass
            return x  # <-
        """,
        AcrobatNameError,
    )


def test_list_loop_needs_a_known_element_type():
    err = bad(
        """\
        def main(n: int) -> int:
            for x in Nil():  # <-
                n += x
            return n
        """,
        AcrobatTypeError,
    )
    assert "annotate" in err.hint


# -- what stays unsupported says what to write ----------------------------------------------

EXITS = {  # break and continue are supported (tests/frontend/test_writer_constructs.py)
    "return_in_for_list": (
        "for x in xs:\n        if x > 2:\n            return x  # <-",
        "return",
        "return after the loop",
    ),
    "return_in_while": (
        "while n > 0:\n        return n  # <-",
        "return",
        "return after the loop",
    ),
}


@pytest.mark.parametrize("name", sorted(EXITS))
def test_loop_exits_say_how_to_write_them(name):
    body, construct, fix = EXITS[name]
    src = f"def main(n: int, xs: List[int]) -> int:\n    {body}\n    return n\n"
    err = bad(src, AcrobatSyntaxError)
    assert err.message == f"{construct} is not supported in loops"
    assert fix in err.hint and "break" in err.hint


@pytest.mark.parametrize(
    "loop, says",
    [
        ("for y in x:  # <-", "not Tensor[3]"),
        ("for y in n:  # <-", "not int"),
        ("for y in range(0, n, 2):  # <-", "range(n) or range(start, stop)"),
        ("for y in [n, n]:  # <-", "Cons(x, xs)"),
    ],
)
def test_for_over_what_cannot_be_iterated_says_what_can(loop, says):
    src = f"""\
H = Size("H", 3)
def main(x: Tensor[H], n: int) -> int:
    {loop}
        n += 1
    return n
"""
    err = bad(src, AcrobatSyntaxError)
    assert says in str(err)
    if "not" in says:
        assert "range(n)" in err.hint and "List[T]" in err.hint


TENSOR_DEPENDENT_LIST_LOOP = """
H = Size("H", 3)
W: Param[H, H]
w: Param[1, H]
THRESH = 0.5

def main(xs: List[Tensor[H]], h: Tensor[H]) -> tuple[Tensor[H], int]:
    hits = 0
    for x in xs:
        h = tanh(dense(x + h, W))
        if item(sigmoid(dense(h, w))) > THRESH:
            hits += 1
            h = h * 0.5
    return h, hits
"""


def test_list_loop_with_a_tensor_dependent_branch():
    rng = np.random.default_rng(0)
    instances = [
        (
            acrobat.from_list([rng.standard_normal(3).astype(np.float32) for _ in range(k)]),
            rng.standard_normal(3).astype(np.float32),
        )
        for k in range(6)
    ]
    _, p, want = check(TENSOR_DEPENDENT_LIST_LOOP, instances)
    for (xs, h), (y, hits) in zip(instances, want):
        n = 0
        for x in acrobat.to_list(xs):
            h = np.tanh(p["W"] @ (x + h))
            if 1 / (1 + np.exp(-(p["w"] @ h)[0])) > 0.5:
                n, h = n + 1, h * 0.5
        np.testing.assert_allclose(y, h, rtol=1e-5)
        assert hits == n
    assert len({hits for _, hits in want}) >= 2, "the branch should depend on the values"


def test_host_op_type_rules_name_what_they_accept():
    from acrobat.ir.ops import infer_op
    from acrobat.ir.types import FLOAT, INT, AdtType, TensorType

    assert infer_op("h.len", [AdtType("List", (INT,))], {}) == INT
    assert infer_op("h.max", [INT, FLOAT], {}) == FLOAT
    assert infer_op("h.abs", [INT], {}) == INT
    with pytest.raises(AcrobatTypeError, match="len: needs a List, got Tensor"):
        infer_op("h.len", [TensorType((3,))], {})
    with pytest.raises(AcrobatTypeError, match="min: needs host int/float operands"):
        infer_op("h.min", [INT, TensorType((3,))], {})
