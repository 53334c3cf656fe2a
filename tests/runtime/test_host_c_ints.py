"""The compiled host program's int64 shadows (acrobat/codegen/host_c.py).

Host ints and tensor value ids are kept as C int64s beside their Python objects, and host
int arithmetic runs on them. The results must stay Python's: floor division and modulo
of negative numbers, ``min``/``max``, ``abs``, comparisons; and where Python's ints would
leave the int64 range, or Python raises, the C program stops and the Python program gives
the run its values or its typed error. These tests run programs that reach those edges,
with the C program and with the Python one, and compare."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.errors import InstanceError
from acrobat.ir.values import from_list, values_equal
from tests.runtime.helpers import run_host_c as run

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"no C compiler here: {native.status()}"
)

I64_MAX, I64_MIN = 2**63 - 1, -(2**63)

ARITH = """H = Size("H", 2)
V = Size("V", 7)
W: Param[V, H]

def mix(a: int, b: int) -> int:
    q = a // b
    r = a % b
    return min(q, r) * 3 - max(-q, abs(r)) + q

def main(x: Tensor[H], a: int, b: int) -> tuple[Tensor[H], int]:
    k = mix(a, b)
    if k < a and a != b:
        return tanh(x) + embed(W, (k % 7 + 7) % 7), k
    return x, k + 1
"""


def compiled(source):
    module = acrobat.parse(source)
    prog = acrobat.compile(module, acrobat.init_params(module))
    assert prog.host_program.c_source is not None
    return prog


def instances(pairs):
    return [(np.full(2, 0.1 * (i + 1), np.float32), a, b) for i, (a, b) in enumerate(pairs)]


PAIRS = [
    (7, 3), (-7, 3), (7, -3), (-7, -3), (0, 5), (5, 7), (-1, 2), (1, -2), (123456789, -1000),
    (I64_MAX, 2), (I64_MIN, 3), (I64_MIN + 1, -1), (I64_MAX, -1), (2**61, 1), (-(2**61), 1),
    (I64_MIN, -1), (I64_MAX, 1), (I64_MIN, 1), (2**62, -(2**62) + 1),
]  # fmt: skip


def python_mix(a, b):
    """``main``'s int, and whether every int on its way fits in int64."""
    q, r = a // b, a % b
    steps = [q, r, min(q, r), min(q, r) * 3, -q, abs(r), max(-q, abs(r))]
    k = min(q, r) * 3 - max(-q, abs(r)) + q
    steps += [min(q, r) * 3 - max(-q, abs(r)), k]
    if k < a and a != b:
        steps += [k % 7, k % 7 + 7]
    else:
        k += 1
        steps.append(k)
    return k, all(I64_MIN <= x <= I64_MAX for x in steps)


def test_the_pairs_reach_both_sides_of_int64():
    fits = [python_mix(a, b)[1] for a, b in PAIRS]
    assert 0 < sum(fits) < len(fits) - 3


@needs_native
def test_int_arithmetic_in_range_is_pythons_and_stays_in_c():
    pairs = [p for p in PAIRS if python_mix(*p)[1]]
    prog = compiled(ARITH)
    xs = instances(pairs)
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code == "c"
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    assert [k for _, k in c.outputs] == [python_mix(a, b)[0] for a, b in pairs]
    assert all(type(k) is int for _, k in c.outputs)


@needs_native
@pytest.mark.parametrize("pair", [p for p in PAIRS if not python_mix(*p)[1]])
def test_ints_past_int64_leave_the_run_to_python(pair):
    """Python's ints do not overflow: the C program stops, the Python one computes the
    big ints, and the run's values are its."""
    prog = compiled(ARITH)
    xs = instances([(7, 3), pair])
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code.startswith("python (the c run stopped: OverflowError")
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    assert c.outputs[1][1] == python_mix(*pair)[0]


@needs_native
@pytest.mark.parametrize("b", [0])
def test_a_zero_division_is_the_python_programs_error(b):
    prog = compiled(ARITH)
    xs = instances([(7, 3), (5, b)])
    errors = []
    for mode in ("0", "1"):
        with pytest.raises(InstanceError) as info:
            run(prog, xs, mode)
        errors.append((info.value.index, str(info.value)))
    assert errors[0] == errors[1] and errors[0][0] == 1
    assert "division or modulo by zero" in errors[0][1]


@needs_native
def test_numpy_ints_run_in_python_with_numpys_results():
    """An int parameter takes NumPy ints too; their arithmetic is NumPy's, which the C
    program does not copy: it leaves the run to the Python program."""
    prog = compiled(ARITH)
    xs = [(np.full(2, 0.5, np.float32), np.int64(-7), np.int64(3))]
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code.startswith("python (the c run stopped: TypeError")
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)


LOOP = """H = Size("H", 2)

def walk(xs: List[int], n: int, acc: Tensor[H]) -> tuple[Tensor[H], int]:
    match xs:
        case Nil():
            return acc, n
        case Cons(k, rest):
            if k % 3 == 0:
                return walk(rest, n - k, tanh(acc))
            return walk(rest, n * 2 + k, acc + acc)

def main(x: Tensor[H], xs: List[int]) -> tuple[Tensor[H], int]:
    return walk(xs, 0, x)
"""


@needs_native
def test_a_self_tail_loop_carries_its_int_and_tensor_parameters():
    prog = compiled(LOOP)
    assert "goto top;" in prog.host_program.c_source
    xs = [(np.full(2, 0.01, np.float32), from_list(list(range(n)))) for n in (0, 1, 5, 17)]
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code == "c"
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    assert [k for _, k in c.outputs][:3] == [0, 0, 6]  # 0, 1, 4, 1, 6


class _Everything(frozenset):
    def __contains__(self, item):
        return True


@needs_native
@pytest.mark.parametrize("name", ["arith", "loop", "drnn", "stackrnn", "treelstm"])
def test_locals_without_shadows_record_the_same_rows(monkeypatch, name):
    """A local whose definitions disagree on a shadow (a conflict) is generated without
    one: its value is its Python object everywhere, and ints are unboxed where they are
    used. Every local made so here, the runs still equal the Python program's."""
    from acrobat.codegen import host_c
    from acrobat.models import load

    once = host_c._CGen.function_once
    monkeypatch.setattr(
        host_c._CGen, "function_once", lambda self, f, no: once(self, f, _Everything())
    )
    if name in ("arith", "loop"):
        prog = compiled(ARITH if name == "arith" else LOOP)
        xs = (
            instances([p for p in PAIRS if python_mix(*p)[1]])
            if name == "arith"
            else [(np.full(2, 0.01, np.float32), from_list(list(range(n)))) for n in (0, 3, 9)]
        )
    else:
        spec = load(name, "small")
        prog = acrobat.compile(spec.module, spec.params)
        xs = spec.instances(5, seed=4)
    src = prog.host_program.c_source
    assert "int64_t Uv_" not in src and "Py_CLEAR(v_" not in src  # no shadows at all
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code == "c"
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    for key in ("nodes", "launches", "passes"):
        assert c.stats[key] == py.stats[key], key


FLOATS = """H = Size("H", 1)

def main(x: Tensor[H], y: float) -> tuple[Tensor[H], bool, bool, bool]:
    v = item(x)
    return tanh(x), v < y, v == y, v != y
"""


@needs_native
def test_float_comparisons_are_pythons_nan_included():
    prog = compiled(FLOATS)
    nan, inf = float("nan"), float("inf")
    vals = [(0.5, 0.25), (0.25, 0.5), (1.0, 1.0), (nan, 1.0), (nan, nan), (-inf, 0.0)]
    xs = [(np.array([a], np.float32), b) for a, b in vals]
    xs.append((np.array([0.5], np.float32), np.float64(0.5)))  # a NumPy float: Python's path
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code == "c"
    got = [tuple(o[1:]) for o in c.outputs]
    assert got == [tuple(o[1:]) for o in py.outputs]
    assert got[:6] == [
        (a < b, a == b, a != b) for a, b in [(np.float32(a).item(), b) for a, b in vals]
    ]


MAPS = """H = Size("H", 2)
V = Size("V", 9)
E: Param[V, H]

def scale(k: int, x: Tensor[H], n: int) -> Tensor[H]:
    if (k * n) % 3 == 1:
        return tanh(x + embed(E, k % 9))
    return x

def two(x: Tensor[H], n: int) -> tuple[Tensor[H], int]:
    return tanh(x), n - 1

def main(x: Tensor[H], ks: List[int], n: int) -> tuple[List[Tensor[H]], int, int]:
    ys = map(scale, ks, x, n)
    (a, m1), (b, m2) = parallel(two(x, n), two(x + x, n * 2))
    return ys, m1 + m2, len(ks)
"""


@needs_native
def test_maps_and_parallel_calls_pass_ints_and_tensors_as_the_python_program_does():
    """A map's items and extra arguments reach the C function through its boxed wrapper;
    a parallel's calls take int64s; a list of tensors and host ints come back."""
    prog = compiled(MAPS)
    xs = [
        (np.full(2, 0.1 * (i + 1), np.float32), from_list(list(range(i, 3 * i + 2))), n)
        for i, n in enumerate((1, -4, 7, 0))
    ]
    c, py = run(prog, xs, "1"), run(prog, xs, "0")
    assert c.stats.host_code == "c"
    assert values_equal(c.outputs, py.outputs, rtol=0, atol=0)
    ns = (1, -4, 7, 0)
    assert [tuple(o[1:]) for o in c.outputs] == [(3 * n - 2, 2 * i + 2) for i, n in enumerate(ns)]
