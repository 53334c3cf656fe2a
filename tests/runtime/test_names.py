"""Host-program identifiers are a one-to-one encoding of source names.

Two source names that a lossy mangling would merge (``é`` and ``qc3a9``, ``_`` and ``__``,
names that are keywords of C, very long names) must stay two functions in the Python and
the C host programs, batched and direct alike: each instance's output equals the reference
interpreter's.
"""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.codegen import ident
from acrobat.frontend import parse
from tests.runtime.helpers import assert_outputs_equal, run_host_c

LONG = "n" * 300
PAIRS = [("é", "qc3a9"), ("_", "x__"), ("register", "volatile"), (LONG, LONG + "x"), ("q", "q71")]


def source(a: str, b: str) -> str:
    """A program whose two host functions, named ``a`` and ``b``, differ (1x and 2x)."""
    return f"""
H = Size("H", 4)
W: Param[H, H]

def {a}(x: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x, W))

def {b}(x: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x, W)) * 2.0

def main(x: Tensor[H]) -> Tensor[H]:
    return {a}(x) + {b}(x) * 10.0
"""


@pytest.mark.parametrize("a, b", PAIRS, ids=[f"{a[:8]}-{b[:8]}" for a, b in PAIRS])
def test_ident_is_one_to_one(a, b):
    assert ident("f_", a) != ident("f_", b)
    for name in (a, b):
        out = ident("f_", name)
        assert out.isidentifier() and out.isascii()


def test_ident_keeps_plain_names_and_encodes_the_rest():
    assert ident("f_", "cell") == "f_cell"
    assert ident("f_", "é") == "f_qc3a9"
    assert ident("f_", "qc3a9") == "f_q" + b"qc3a9".hex()


@pytest.mark.parametrize("a, b", PAIRS, ids=[f"{a[:8]}-{b[:8]}" for a, b in PAIRS])
@pytest.mark.parametrize("mode", ["0", "1"])
def test_colliding_candidates_stay_two_functions(a, b, mode):
    module = parse(source(a, b))
    rng = np.random.default_rng(0)
    params = {"W": rng.standard_normal((4, 4)).astype(np.float32)}
    prog = acrobat.compile(module, params, acrobat.CompileOptions(inline_max_bindings=0))
    xs = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    refs = [acrobat.evaluate(module, x, params) for x in xs]
    res = run_host_c(prog, xs, mode)
    assert_outputs_equal(res.outputs, refs, f"{a[:8]}/{b[:8]} host {mode}")
    if mode == "1":
        assert res.stats.host_code == "c", res.stats.host_code
    direct = acrobat.run(prog, xs, strategy="direct", trace_level="off")
    assert_outputs_equal(direct.outputs, refs, "direct")
