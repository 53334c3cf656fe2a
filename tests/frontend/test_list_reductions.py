"""List reductions (acrobat/frontend/reductions.py, acrobat/ir/list_ops.py): ``sum``, ``max``,
``argmax`` of a List of tensors and ``attend(keys, values, query)``; all but ``argmax`` one
segmented launch per pass (acrobat/runtime/segments.py).

Values equal closed-form NumPy and, on an attention decoder, a float64 reference; every
policy, option set, strategy and host program equals the interpreter (the fuzzer's
differential check); and the launches per decode step are the same for every list length
where the recursive-helper version of the same model grows with the length.
"""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.errors import EvaluationError
from acrobat.fuzz.check import check_program
from acrobat.ir.ops import LIST_INDEX_ERROR
from acrobat.ir.values import from_list

RNG = np.random.default_rng(3)

REDUCE = """H = Size("H", 4)
W: Param[H, H]

def score(x: Tensor[H], q: Tensor[H]) -> Tensor[1]:
    return sum(x * q, keepdims=True)

def main(
    xs: List[Tensor[H]], vs: List[Tensor[2, H]], q: Tensor[H]
) -> tuple[Tensor[H], Tensor[H], int, Tensor[2, H], Tensor[H]]:
    s = sum(xs)
    return s, max(xs), argmax(map(score, xs, q)), attend(xs, vs, q), tanh(dense(s, W))
"""


def _instance(n: int):
    xs = from_list([RNG.standard_normal(4).astype(np.float32) for _ in range(n)])
    vs = from_list([RNG.standard_normal((2, 4)).astype(np.float32) for _ in range(n + 1)])
    return xs, vs, RNG.standard_normal(4).astype(np.float32)


def test_reductions_equal_numpy_and_every_path():
    m = acrobat.parse(REDUCE)
    p = acrobat.init_params(m, 0)
    xs = [_instance(n) for n in (1, 2, 3, 7, 12)]
    for x in xs:
        s, mx, am, att, _ = acrobat.evaluate(m, x, p)
        keys, q = acrobat.to_list(x[0]), x[2]
        values = acrobat.to_list(x[1])[: len(keys)]  # zipped: the shorter list decides
        scores = np.array([float(k @ q) for k in keys])
        w = np.exp(scores - scores.max())
        w /= w.sum()
        assert np.allclose(s, np.sum(keys, axis=0), atol=1e-5)
        assert np.array_equal(mx, np.max(keys, axis=0))
        assert am == int(np.argmax(scores))
        assert np.allclose(att, sum(a * v for a, v in zip(w, values)), atol=1e-5)
    result = check_program(REDUCE, xs)
    assert result.ok, "\n".join(str(f) for f in result.failures)


def test_an_empty_list_sums_to_zeros_and_has_no_max():
    src = 'H = Size("H", 2)\ndef main(xs: List[Tensor[H]]) -> Tensor[H]:\n    return sum(xs)\n'
    assert np.array_equal(acrobat.evaluate(acrobat.parse(src), from_list([])), np.zeros(2))
    m = acrobat.parse(REDUCE)
    with pytest.raises(EvaluationError, match=LIST_INDEX_ERROR):
        acrobat.evaluate(m, _instance(0), acrobat.init_params(m, 0))
    result = check_program(REDUCE, [_instance(2), _instance(0)], null_backend=False)
    assert result.ok, "\n".join(str(f) for f in result.failures)


def test_a_reduction_of_something_else_says_what_it_takes():
    bad = 'H = Size("H", 2)\ndef main(xs: List[int]) -> int:\n    return argmax(xs)\n'
    with pytest.raises(acrobat.AcrobatTypeError, match="argmax of a List needs tensors"):
        acrobat.parse(bad)
    bad = 'H = Size("H", 2)\ndef main(xs: List[Tensor[H]]) -> int:\n    return argmax(xs)\n'
    with pytest.raises(acrobat.AcrobatTypeError, match="needs scores"):
        acrobat.parse(bad)


# -- an attention decoder, with attend and with recursive helpers ----------------------------

DECODER = """H = Size("H", 16)
W: Param[H, H]
U: Param[H, H]
K: Param[H, H]

def key(x: Tensor[H]) -> Tensor[H]:
    return dense(x, K)

{attend}

def main(xs: List[Tensor[H]], steps: int) -> Tensor[H]:
    ks = map(key, xs)
    q = zeros(H)
    for t in range(steps):
        q = tanh(dense(ATTEND(ks, xs, q), W) + dense(q, U))
    return q
"""

BUILT_IN = DECODER.format(attend="").replace("ATTEND", "attend")

HELPERS = DECODER.format(
    attend="""
def score_max(ks: List[Tensor[H]], q: Tensor[H], m: Tensor[1]) -> Tensor[1]:
    match ks:
        case Nil():
            return m
        case Cons(k, rest):
            return score_max(rest, q, maximum(m, sum(k * q, keepdims=True)))

def exp_sum(ks: List[Tensor[H]], q: Tensor[H], m: Tensor[1], acc: Tensor[1]) -> Tensor[1]:
    match ks:
        case Nil():
            return acc
        case Cons(k, rest):
            return exp_sum(rest, q, m, acc + exp(sum(k * q, keepdims=True) - m))

def weighted(
    ks: List[Tensor[H]], vs: List[Tensor[H]], q: Tensor[H], m: Tensor[1], acc: Tensor[H]
) -> Tensor[H]:
    for k, v in zip(ks, vs):
        acc = acc + v * exp(sum(k * q, keepdims=True) - m)
    return acc

def my_attend(ks: List[Tensor[H]], vs: List[Tensor[H]], q: Tensor[H]) -> Tensor[H]:
    m = score_max(ks, q, sum(ks[0] * q, keepdims=True))
    return weighted(ks, vs, q, m, zeros(H)) / exp_sum(ks, q, m, zeros(1))
"""
).replace("ATTEND", "my_attend")


def decoder_reference(params: dict, xs: list, steps: int) -> np.ndarray:
    """The decoder in float64 NumPy."""
    W, U, K = (params[n].astype(np.float64) for n in ("W", "U", "K"))
    xs = [x.astype(np.float64) for x in xs]
    keys = [K @ x for x in xs]
    q = np.zeros(W.shape[0])
    for _ in range(steps):
        s = np.array([k @ q for k in keys])
        a = np.exp(s - s.max())
        q = np.tanh(W @ sum(w * x for w, x in zip(a / a.sum(), xs)) + U @ q)
    return q


def decoder_instances(n_instances: int, length: int, steps: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [
        (from_list([rng.standard_normal(16).astype(np.float32) * 0.5 for _ in range(n)]), steps)
        for n in rng.integers(1, length + 1, n_instances)
    ]


@pytest.mark.parametrize("src", [BUILT_IN, HELPERS], ids=["attend", "helpers"])
def test_the_decoder_equals_a_float64_reference(src):
    m = acrobat.parse(src)
    p = acrobat.init_params(m, 0)
    xs = decoder_instances(12, 20, 3)
    for policy in (p.name for p in acrobat.policies()):
        out = acrobat.run(acrobat.compile(m, p), xs, policy=policy).outputs
        for y, (lst, steps) in zip(out, xs):
            want = decoder_reference(p, acrobat.to_list(lst), steps)
            np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def _launches_per_step(src: str, length: int) -> float:
    """Launches of one decode step of 16 instances, the longest list ``length`` long."""
    m = acrobat.parse(src)
    prog = acrobat.compile(m, acrobat.init_params(m, 0))
    rng = np.random.default_rng(length)
    sizes = [length, *rng.integers(1, length + 1, 15)]
    lists = [
        from_list([rng.standard_normal(16).astype(np.float32) for _ in range(n)]) for n in sizes
    ]
    one, four = (acrobat.run(prog, [(x, s) for x in lists]).stats.launches for s in (1, 4))
    return (four - one) / 3  # the steps after the first


def test_attend_launches_a_constant_number_per_step():
    """One decode step: the keys' map, the segmented attend, the cell — whatever the
    lists' lengths (4 to 64); the recursive helpers launch per element."""
    steps = {length: _launches_per_step(BUILT_IN, length) for length in (4, 8, 32, 64)}
    assert len(set(steps.values())) == 1, steps
    assert steps[4] <= 4, steps
    for length in (8, 32):
        assert _launches_per_step(HELPERS, length) >= 2 * length, length


@pytest.mark.parametrize("reduction", ["max(xs)", "attend(xs, xs, q)", "argmax(map(first, xs))"])
def test_an_unused_reduction_of_an_empty_list_still_raises(reduction):
    """Dead-code elimination keeps a max/attend/argmax that may fail, as the interpreter runs
    it (a fuzz campaign found the batched run succeeding where the reference raised)."""
    src = (
        'H = Size("H", 2)\ndef first(x: Tensor[H]) -> Tensor[1]:\n    return x[0:1]\n'
        "def main(xs: List[Tensor[H]], q: Tensor[H]) -> Tensor[H]:\n"
        f"    unused = {reduction}\n    return q\n"
    )
    one = np.ones(2, np.float32)
    xs = [(from_list([one] * n), one) for n in (1, 0, 2)]
    result = check_program(src, xs)
    assert result.ok and result.reference_errors == 1, result


def test_argmax_of_a_list_is_one_launch_and_takes_the_first_of_equal_scores():
    src = "def main(xs: List[Tensor[1]]) -> int:\n    return argmax(xs)\n"
    lists = [[1.0, 3.0, 3.0, 2.0], [5.0], [-np.inf, -np.inf], [0.0, 2.0, 1.0, 2.0, 2.0] * 9]
    xs = [from_list([np.array([v], np.float32) for v in vals]) for vals in lists]
    m = acrobat.parse(src)
    assert [acrobat.evaluate(m, x) for x in xs] == [1, 0, 0, 1]
    result = check_program(src, xs)
    assert result.ok, "\n".join(str(f) for f in result.failures)
    run = acrobat.run(acrobat.compile(m, {}), xs)
    assert run.outputs == [1, 0, 0, 1] and run.stats.launches == 1


SKEWED = """H = Size("H", 64)

def main(xs: List[Tensor[H]], q: Tensor[H]) -> tuple[Tensor[H], Tensor[H], Tensor[H]]:
    return sum(xs), max(xs), attend(xs, xs, q)
"""


def test_one_long_list_among_short_ones_costs_its_own_rows():
    """63 lists of one and one of 20,000 (64 wide): padding every list to the longest would
    take 64 x 20,000 rows (330 MB a reduction); the host path reduces the segments in place."""
    import tracemalloc

    rng = np.random.default_rng(5)
    row = rng.integers(-3, 4, 64).astype(np.float32)  # small ints: every sum exact in float32
    long = from_list([row * (1 + i % 7) / 8 for i in range(20_000)])
    xs = [(long if i == 0 else from_list([row]), row) for i in range(64)]
    m = acrobat.parse(SKEWED)
    prog = acrobat.compile(m, {})
    acrobat.run(prog, xs[:2], strategy="batched")  # warm: compiled, arenas made
    tracemalloc.start()
    try:
        res = acrobat.run(prog, xs, strategy="batched")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, peak
    assert res.stats.launches == 3
    for x, y in zip(xs[:2], res.outputs[:2]):
        want = acrobat.evaluate(m, x)
        for a, b in zip(want, y):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-3)
