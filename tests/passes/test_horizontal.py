"""BatchHorizontally: dense ops on one input merged into one dense on stacked weights."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.passes.anf import ToANF
from acrobat.passes.horizontal import BatchHorizontally
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, run, vec

# a GRU: three gate projections of x (with biases), two of h (without), one of r * h
SRC = """
H = Size("H", 4)
W_z: Param[H, H]
U_z: Param[H, H]
b_z: Param[H]
W_r: Param[H, H]
U_r: Param[H, H]
b_r: Param[H]
W_n: Param[2 * H, H]
U_n: Param[2 * H, H]
b_n: Param[2 * H]
P: Param[H, 2 * H]

def main(x: Tensor[H], h: Tensor[H]) -> Tensor[H]:
    z = sigmoid(dense(x, W_z, b_z) + dense(h, U_z))
    r = sigmoid(dense(x, W_r, b_r) + dense(h, U_r))
    n = tanh(dense(x, W_n, b_n) + dense(r * h, U_n))
    return (1.0 - z) * dense(n, P) + z * h
"""


def setup():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m)
    anf, _ = run([ToANF()], m, params)
    rng = np.random.default_rng(0)
    return anf, params, [(vec(rng, 4), vec(rng, 4)) for _ in range(3)]


def test_horizontal_golden():
    m, params, xs = setup()
    out, ctx = check_pass(BatchHorizontally(), m, params, xs, case="gru_gates")
    p = ctx.params
    # rows stacked in program order: W_z, W_r, W_n (the last one 2H rows)
    np.testing.assert_array_equal(
        p["_hcat0"], np.concatenate([params[k] for k in ("W_z", "W_r", "W_n")])
    )
    np.testing.assert_array_equal(
        p["_hbias0"], np.concatenate([params[k] for k in ("b_z", "b_r", "b_n")])
    )
    np.testing.assert_array_equal(p["_hcat1"], np.concatenate([params["U_z"], params["U_r"]]))
    assert "_hbias1" not in p
    text = out.pretty()
    assert "dense(%x, $_hcat0, $_hbias0)" in text and "dense(%h, $_hcat1)" in text
    assert "slice(%hcat_1, axis=0, start=8, stop=16)" in text  # W_n's rows
    # r * h and n are single dense ops on their input: left alone
    assert "dense(%t_8, $U_n)" in text and "$P" in text
    assert ctx.notes["BatchHorizontally"] == [
        "main: dense on one input with W_z, W_r, W_n -> $_hcat0",
        "main: dense on one input with U_z, U_r -> $_hcat1",
    ]


def test_off_leaves_module_unchanged():
    m, params, _ = setup()
    out, _ = run([BatchHorizontally()], m, params, CompileOptions(horizontal_batching=False))
    assert out == m
