"""``int ** int`` with a negative exponent: the language types it ``int``, and ``2 ** -1``
is not one, so every path raises the same typed error (the interpreter, the Python and C
host programs, the direct strategy) instead of reading row 0 of an embedding or looping
``range(2.5)`` times."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.errors import EvaluationError, InstanceError
from acrobat.fuzz.check import check_program
from acrobat.ir.ops import NEGATIVE_INT_POWER

POWER = """H = Size("H", 4)
V = Size("V", 9)
E: Param[V, H]

def main(x: Tensor[H], a: int, b: int) -> Tensor[H]:
    k = a ** b
    h = x + embed(E, k)
    for i in range(k + 2):
        h = tanh(h)
    return h
"""


def _instances(pairs):
    return [(np.full(4, 0.1 * (i + 1), np.float32), a, b) for i, (a, b) in enumerate(pairs)]


def test_a_negative_int_exponent_is_a_typed_error_in_the_interpreter():
    m = acrobat.parse(POWER)
    params = acrobat.init_params(m, 0)
    x = _instances([(2, 3)])[0]
    assert acrobat.evaluate(m, x, params).shape == (4,)
    with pytest.raises(EvaluationError, match=NEGATIVE_INT_POWER) as info:
        acrobat.evaluate(m, (x[0], 2, -1), params)
    assert info.value.line == 6  # k = a ** b


@pytest.mark.parametrize("strategy", ["batched", "direct"])
def test_every_strategy_names_the_instance_and_the_negative_exponent(strategy):
    m = acrobat.parse(POWER)
    prog = acrobat.compile(m, acrobat.init_params(m, 0))
    with pytest.raises(InstanceError, match=NEGATIVE_INT_POWER) as info:
        acrobat.run(prog, _instances([(2, 2), (2, -1), (3, 1)]), strategy=strategy)
    assert info.value.index == 1


def test_every_path_agrees_on_negative_exponents():
    """Every policy and option set, the direct strategy, the C and Python host programs:
    the batches with a negative exponent fail on its instance, the others equal the
    interpreter (the fuzzer's differential check)."""
    for pairs in ([(2, 2), (-2, 3), (1, 0)], [(2, 2), (2, -1)], [(0, -2), (1, 1)]):
        result = check_program(POWER, _instances(pairs), null_backend=False)
        assert result.ok, "\n".join(str(f) for f in result.failures)


def test_float_powers_stay_floats():
    src = """H = Size("H", 2)

def main(x: Tensor[H], a: int, b: int) -> Tensor[H]:
    return x * ((a * 1.0) ** b) + x * (2.0 ** b)
"""
    m = acrobat.parse(src)
    x = np.ones(2, np.float32)
    y = acrobat.evaluate(m, (x, 2, -2), {})
    np.testing.assert_allclose(y, np.full(2, 0.25 + 0.25), rtol=1e-6)
    assert check_program(src, [(x, 2, -2), (x, 3, 1)], null_backend=False).ok
