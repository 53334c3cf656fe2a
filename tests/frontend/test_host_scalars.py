"""Host ints and floats scale tensors: ``x * s`` with a host ``s`` becomes ``scalar(s)``,
a 0-d float32 tensor made inside the kernel, and batches like any other op."""

import textwrap

import numpy as np
import pytest

import acrobat
from acrobat import AdtValue as V

SRC = """
H = Size("H", 3)
W: Param[H, H]

class Item(ADT):
    It: (Tensor[H], float, int)

def main(t: Item) -> Tensor[H]:
    match t:
        case It(x, s, n):
            return tanh(dense(x * s, W)) / (n + 1) - s
"""


def test_host_scalars_scale_tensors_batched_and_per_instance():
    m = acrobat.parse(textwrap.dedent(SRC))
    p = acrobat.init_params(m, 0)
    rng = np.random.default_rng(0)
    xs = [V("It", (rng.standard_normal(3).astype(np.float32), 0.25 * i - 1, i)) for i in range(6)]
    prog = acrobat.compile(m, p)
    for policy in (p.name for p in acrobat.policies()):
        outs = acrobat.run(prog, xs, policy=policy).outputs
        for (x, s, n), got in zip((item.fields for item in xs), outs):
            want = np.tanh(p["W"] @ (x * np.float32(s))) / np.float32(n + 1) - np.float32(s)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            assert got.dtype == np.float32
    assert "scalar" in m.pretty()


def test_a_host_bool_does_not_mix_with_tensors():
    src = """
    H = Size("H", 3)
    def main(x: Tensor[H], b: bool) -> Tensor[H]:
        return x * b
    """
    with pytest.raises(acrobat.AcrobatTypeError) as err:
        acrobat.parse(textwrap.dedent(src))
    assert err.value.line == 4
    assert "1.0 if b else 0.0" in err.value.hint


def test_an_int_beyond_int64_scaling_a_tensor_is_a_typed_error_in_both():
    src = """
    H = Size("H", 3)
    def main(x: Tensor[H], n: int) -> Tensor[H]:
        return x * n
    """
    m = acrobat.parse(textwrap.dedent(src))
    xs = [(np.ones(3, np.float32), 2), (np.ones(3, np.float32), 2**64)]
    with pytest.raises(acrobat.EvaluationError):
        acrobat.evaluate(m, xs[1], {})
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(acrobat.compile(m, {}), xs)
    assert err.value.index == 1


def test_phase_after_an_early_return_is_refused_by_the_frontend():
    """The rest of main after `if ...: return` runs inside the branch, where the compiler
    would refuse phase(); the frontend says so first, with the line."""
    src = """
    H = Size("H", 3)
    def main(x: Tensor[H], n: int) -> Tensor[H]:
        if n > 2:
            return x
        phase()
        return tanh(x)
    """
    with pytest.raises(acrobat.AcrobatPhaseError) as err:
        acrobat.parse(textwrap.dedent(src))
    assert err.value.line == 6
    assert "early" in err.value.message
