"""FoldWeightExpressions: weight-only ops become derived weights computed once."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.passes.anf import ToANF
from acrobat.passes.fold_weights import FoldWeightExpressions
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, run, vec

SRC = """
H = Size("H", 4)
W: Param[H, H]
U: Param[H, H]
b: Param[H]

def step(x: Tensor[H], h: Tensor[H]) -> Tensor[H]:
    M = W + U * 0.5
    return tanh(dense(x, transpose(W, (1, 0))) + dense(h, M, b) + zeros(H))

def main(x: Tensor[H], h: Tensor[H]) -> Tensor[H]:
    return step(x, h) + dense(h, transpose(W, (1, 0)))
"""


def setup():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m)
    anf, _ = run([ToANF()], m, params)
    rng = np.random.default_rng(0)
    return anf, params, [(vec(rng, 4), vec(rng, 4)) for _ in range(3)]


def test_fold_golden():
    m, params, xs = setup()
    out, ctx = check_pass(FoldWeightExpressions(), m, params, xs, case="weight_expressions")
    # W + U * 0.5 is a chain of two folds; transpose(W) is folded once for both functions
    assert [p.name for p in out.params][-3:] == ["_fold0", "_fold1", "_fold2"]
    np.testing.assert_array_equal(ctx.params["_fold0"], params["U"] * np.float32(0.5))
    np.testing.assert_array_equal(ctx.params["_fold1"], params["W"] + params["U"] * np.float32(0.5))
    np.testing.assert_array_equal(ctx.params["_fold2"], params["W"].T)
    assert ctx.params["_fold2"].flags.c_contiguous
    text = out.pretty()
    assert text.count("dense(%x, $_fold2)") == 1 and text.count("dense(%h, $_fold2)") == 1
    # an op with no weight operand stays an ordinary (per-instance) value
    assert "zeros(shape=4)" in text
    # the weights given to compile are never changed
    for k, v in params.items():
        np.testing.assert_array_equal(ctx.params[k], v)


def test_off_leaves_module_unchanged():
    m, params, _ = setup()
    out, ctx = run([FoldWeightExpressions()], m, params, CompileOptions(taint_specialization=False))
    assert out == m and set(ctx.params) == set(params)
