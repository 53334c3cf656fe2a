"""What a model writer reaches for: ``xs[k]``, ``break``/``continue``, ``zip`` and ``map``
over two lists, ``int()``/``float()``, generic helpers over ``List[T]``, and tensor slices at
a host-int offset.

Each program is checked against closed-form Python/NumPy through ``acrobat.evaluate``, then
by the fuzzer's differential check (:func:`acrobat.fuzz.check.check_program`): every
registered policy under every option set, the null backend, the direct strategy and the C
host program against the Python one must equal the interpreter, or raise the typed error
of the same instance.
"""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import AcrobatSyntaxError, AcrobatTypeError
from acrobat.errors import EvaluationError, InstanceError
from acrobat.fuzz.check import check_program
from acrobat.ir.ops import LIST_INDEX_ERROR
from acrobat.ir.parser import parse_module
from acrobat.ir.values import from_list

RNG = np.random.default_rng(47)


def vecs(n: int, h: int = 4):
    return from_list([RNG.standard_normal(h).astype(np.float32) for _ in range(n)])


def agrees(src: str, instances: list, null_backend: bool = True) -> None:
    """Every policy, option set, strategy and host program equals ``evaluate``."""
    m = acrobat.parse(src)
    assert parse_module(m.pretty()) == m
    result = check_program(src, instances, null_backend=null_backend)
    assert result.ok, "\n".join(str(f) for f in result.failures)
    assert result.runs >= 4 * len(acrobat.policies())


def outputs(src: str, instances: list) -> list:
    m = acrobat.parse(src)
    params = acrobat.init_params(m, 0)
    return [acrobat.evaluate(m, x, params) for x in instances]


# -- xs[k] ----------------------------------------------------------------------------------

NTH = """H = Size("H", 4)
W: Param[H, H]

def main(xs: List[Tensor[H]], ks: List[int], k: int) -> tuple[Tensor[H], int]:
    return tanh(dense(xs[k], W)) + xs[-1], ks[k % 2]
"""


def test_list_index_is_pythons():
    xs = [(vecs(3), from_list([5, 6]), 1), (vecs(2), from_list([7, 8]), -2)]
    for (lst, _, k), (y, j) in zip(xs, outputs(NTH, xs)):
        items = [lst.fields[0], lst.fields[1].fields[0]]
        if k == 1:
            items.append(lst.fields[1].fields[1].fields[0])
        assert j == [5, 6][k % 2] or j == [7, 8][k % 2]
        assert np.allclose(
            y - items[-1],
            np.tanh(acrobat.init_params(acrobat.parse(NTH), 0)["W"] @ items[k]),
            atol=1e-5,
        )
    agrees(NTH, xs)


def test_list_index_out_of_range_is_the_same_typed_error_everywhere():
    xs = [(vecs(3), from_list([5, 6]), 0), (vecs(2), from_list([5, 6]), 2)]
    with pytest.raises(EvaluationError, match=LIST_INDEX_ERROR):
        outputs(NTH, xs[1:])
    m = acrobat.parse(NTH)
    prog = acrobat.compile(m, acrobat.init_params(m, 0))
    for strategy in ("batched", "direct"):
        with pytest.raises(InstanceError, match=f"{LIST_INDEX_ERROR}: 2 for a list of 2") as e:
            acrobat.run(prog, xs, strategy=strategy)
        assert e.value.index == 1
    agrees(NTH, xs, null_backend=False)


# -- break and continue ---------------------------------------------------------------------

LOOPS = """H = Size("H", 4)
W: Param[H, H]

def main(xs: List[Tensor[H]], n: int, stop: float) -> tuple[Tensor[H], int, int, int]:
    h = zeros(H)
    steps = 0
    for x in xs:
        if steps >= n:
            break
        h = tanh(dense(x, W) + h)
        steps += 1
        if item(sum(h)) > stop:
            break
    j = 0
    for i in range(10):
        if i % 2 == 1:
            continue
        j += i
        if j > n:
            break
    a = 0
    for i in range(n):
        if i % 3 == 0:
            a += 1
            continue
        else:
            a += 10
            continue
    while True:
        j -= 1
        if j < 3:
            break
    return h, steps, j, a
"""


def _loops(n: int, stop: float, h: list) -> tuple[int, int, int]:
    steps = 0
    for s in h:  # h: the running sums the tensor loop reads
        if steps >= n:
            break
        steps += 1
        if s > stop:
            break
    j = 0
    for i in range(10):
        if i % 2 == 1:
            continue
        j += i
        if j > n:
            break
    a = sum(1 if i % 3 == 0 else 10 for i in range(n))
    while True:
        j -= 1
        if j < 3:
            break
    return steps, j, a


def test_break_and_continue_in_for_and_while():
    xs = [(vecs(3), 1, 9.0), (vecs(5), 9, 0.5), (vecs(4), 3, -1.0), (vecs(0), 2, 0.0)]
    m = acrobat.parse(LOOPS)
    w = acrobat.init_params(m, 0)["W"]
    for (lst, n, stop), (_, *got) in zip(xs, outputs(LOOPS, xs)):
        h, sums = np.zeros(4, np.float32), []
        for x in acrobat.to_list(lst):
            h = np.tanh(w @ x + h)
            sums.append(float(h.sum()))
        assert tuple(got) == _loops(n, stop, sums)
    agrees(LOOPS, xs)


def test_while_true_needs_a_break():
    src = "def main(n: int) -> int:\n    while True:  # <-\n        n += 1\n    return n\n"
    with pytest.raises(AcrobatSyntaxError, match="has no host condition") as e:
        acrobat.parse(src)
    assert "break" in e.value.hint


# -- zip and map over several lists -----------------------------------------------------------

ZIP = """H = Size("H", 4)
W: Param[H, H]

def cell(x: Tensor[H], y: Tensor[H], k: int, h: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x * y, W) + h * k)

def main(
    xs: List[Tensor[H]], ys: List[Tensor[H]], ks: List[int]
) -> tuple[Tensor[H], List[Tensor[H]], int]:
    h = zeros(H)
    n = 0
    for x, k in zip(xs, ks):
        h = h + x * k
        n += k
    for x, y, k in zip(xs, ys, ks):
        h = cell(x, y, k, h)
    return h, map(cell, xs, ys, ks, h), n
"""


def test_zip_stops_at_the_shortest_list_and_map_zips_lists_its_function_takes_apart():
    xs = [
        (vecs(3), vecs(2), from_list([1, 2, 3])),
        (vecs(5), vecs(5), from_list([1, 2, 3, 4])),
        (vecs(0), vecs(2), from_list([1])),
    ]
    w = acrobat.init_params(acrobat.parse(ZIP), 0)["W"]
    for (a, b, ks), (h, mapped, n) in zip(xs, outputs(ZIP, xs)):
        a, b, ks = acrobat.to_list(a), acrobat.to_list(b), acrobat.to_list(ks)
        want = np.zeros(4, np.float32)
        for x, k in zip(a, ks):
            want = want + x * k
        for x, y, k in zip(a, b, ks):
            want = np.tanh(w @ (x * y) + want * k)
        assert n == sum(k for _, k in zip(a, ks))
        assert np.allclose(h, want, atol=1e-5)
        cells = [np.tanh(w @ (x * y) + h * k) for x, y, k in zip(a, b, ks)]
        assert len(acrobat.to_list(mapped)) == len(cells)
        assert all(np.allclose(c, d, atol=1e-5) for c, d in zip(acrobat.to_list(mapped), cells))
    agrees(ZIP, xs)


def test_zip_of_something_else_says_what_it_takes():
    src = 'H = Size("H", 2)\ndef main(x: Tensor[H], xs: List[int]) -> int:\n'
    src += "    n = 0\n    for a, b in zip(xs, x):\n        n += a\n    return n\n"
    with pytest.raises(AcrobatTypeError, match="zip takes Lists"):
        acrobat.parse(src)


# -- int() and float() ----------------------------------------------------------------------

CONVERT = """H = Size("H", 2)

def main(x: Tensor[H], f: float, n: int) -> tuple[Tensor[H], int, float, int]:
    k = int(f * 2.5) + int(-f)
    y = float(n) / 3.0 + float(True)
    return x * y, k, y, int(item(sum(x)))
"""


def test_int_truncates_and_float_converts_host_numbers():
    xs = [(np.array([0.7, 0.6], np.float32), f, n) for f, n in [(1.7, 3), (-2.2, -1), (0.0, 0)]]
    for (x, f, n), (y, k, fl, t) in zip(xs, outputs(CONVERT, xs)):
        assert k == int(f * 2.5) + int(-f) and type(k) is int
        assert fl == float(n) / 3.0 + 1.0 and type(fl) is float
        assert t == int(float(x.sum())) and np.allclose(y, x * fl)
    agrees(CONVERT, xs)


def test_int_of_an_infinite_float_is_a_typed_error_everywhere():
    xs = [(np.ones(2, np.float32), 1.0, 1), (np.ones(2, np.float32), float("inf"), 1)]
    with pytest.raises(EvaluationError, match="int"):
        outputs(CONVERT, xs[1:])
    agrees(CONVERT, xs, null_backend=False)


def test_int_of_a_tensor_says_to_read_it_first():
    src = 'H = Size("H", 2)\ndef main(x: Tensor[H]) -> int:\n    return int(x)\n'
    with pytest.raises(AcrobatTypeError, match="int takes one host int") as e:
        acrobat.parse(src)
    assert "item(x)" in e.value.hint


# -- generic helpers --------------------------------------------------------------------------

GENERIC = """H = Size("H", 4)
T = TypeVar("T")

def length(xs: List[T]) -> int:
    match xs:
        case Nil():
            return 0
        case Cons(_, rest):
            return 1 + length(rest)

def last(xs: List[T], default: T) -> T:
    out = default
    for x in xs:
        out = x
    return out

def double(x: T) -> tuple[T, T]:
    return x, x

def main(xs: List[Tensor[H]], ks: List[int]) -> tuple[int, int, Tensor[H], int, List[tuple[int, int]]]:
    return length(xs), length(ks), last(xs, zeros(H)), last(ks, -1), map(double, ks)
"""


def test_generic_helpers_get_one_copy_per_argument_types():
    m = acrobat.parse(GENERIC)
    names = {f.name for f in m.functions}
    assert {"length__1", "length__2", "last__1", "last__2", "double__1"} <= names
    assert "length" not in names  # only its copies: every function has concrete types
    xs = [(vecs(3), from_list([4, 5])), (vecs(0), from_list([]))]
    for (a, ks), (n, nk, y, k, pairs) in zip(xs, outputs(GENERIC, xs)):
        a, ks = acrobat.to_list(a), acrobat.to_list(ks)
        assert (n, nk, k) == (len(a), len(ks), ks[-1] if ks else -1)
        assert np.array_equal(y, a[-1] if a else np.zeros(4, np.float32))
        assert acrobat.to_list(pairs) == [(k, k) for k in ks]
    agrees(GENERIC, xs)


def test_a_generic_call_that_does_not_fit_says_so():
    src = GENERIC.replace("last(ks, -1)", "last(ks, 0.5)")
    with pytest.raises(AcrobatTypeError, match=r"generic function last\(List\[T\], T\)"):
        acrobat.parse(src)


def test_main_cannot_be_generic():
    src = 'T = TypeVar("T")\ndef main(x: T) -> T:\n    return x\n'
    with pytest.raises(AcrobatTypeError, match="main cannot be generic"):
        acrobat.parse(src)


# -- slices at a host-int offset ------------------------------------------------------------

SLICES = """H = Size("H", 6)
W: Param[2, 3]
M: Param[5, H]

def main(
    x: Tensor[H], k: int, m: Tensor[4, 3]
) -> tuple[Tensor[2], Tensor[1], Tensor[2, H], Tensor[2, 3], Tensor[3]]:
    a = x[k:k + 2]
    b = x[k * 2:k * 2 + 1]
    return tanh(a), b, M[k:k + 2], m[k + 1:k + 1 + 2] + W, x[argmax(x) % 4:argmax(x) % 4 + 3]
"""


def _slice_instance(k):
    return (
        RNG.standard_normal(6).astype(np.float32),
        k,
        RNG.standard_normal((4, 3)).astype(np.float32),
    )


def test_a_slice_at_a_host_int_offset_has_a_static_shape():
    xs = [_slice_instance(k) for k in (0, 1, 0)]
    p = acrobat.init_params(acrobat.parse(SLICES), 0)
    for (x, k, m), (a, b, r, s, t) in zip(xs, outputs(SLICES, xs)):
        j = int(np.argmax(x)) % 4
        assert np.allclose(a, np.tanh(x[k : k + 2])) and np.array_equal(b, x[2 * k : 2 * k + 1])
        assert np.array_equal(r, p["M"][k : k + 2]) and np.allclose(s, m[k + 1 : k + 3] + p["W"])
        assert np.array_equal(t, x[j : j + 3])
    agrees(SLICES, xs)


def test_a_slice_past_the_end_is_a_typed_error_everywhere():
    xs = [_slice_instance(1), _slice_instance(2), _slice_instance(-1)]
    with pytest.raises(EvaluationError, match="outside the table of 4 rows"):
        outputs(SLICES, xs[1:2])
    agrees(SLICES, xs, null_backend=False)


DEAD = """H = Size("H", 2)

def score(x: Tensor[H]) -> Tensor[1]:
    return sum(x, keepdims=True)

def main(xs: List[Tensor[H]], k: int, f: float) -> Tensor[H]:
    unused = xs[k]
    also = int(f)
    best = argmax(map(score, xs))
    return zeros(H)
"""


def test_unused_reads_that_may_fail_still_fail():
    """Dead code elimination keeps ``xs[k]``, ``int(f)`` and list reductions (their
    instances must raise as in the interpreter)."""
    ok = (vecs(2, 2), 1, 0.5)
    for bad in ((vecs(2, 2), 2, 0.5), (vecs(2, 2), 0, float("nan")), (vecs(0, 2), -1, 0.5)):
        agrees(DEAD, [ok, bad], null_backend=False)
        with pytest.raises(EvaluationError):
            outputs(DEAD, [bad])
