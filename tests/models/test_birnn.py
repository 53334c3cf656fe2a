"""BiRNN: the interpreter agrees with the plain-NumPy reference; tokens line up; bad inputs."""

import numpy as np
import pytest

from acrobat import AdtValue as V
from acrobat import evaluate, from_list, to_list
from acrobat.models import load
from tests.models.conftest import ATOL, RTOL, assert_bad_instance_named, assert_close

MODEL = "birnn"
C = 16


def assert_matches_reference(spec, x):
    got, want = to_list(spec.evaluate(x)), to_list(spec.reference(x))
    assert len(got) == len(want) == len(to_list(x))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, (C,))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sst_length_batch_matches_reference(spec, seed):
    for x in spec.instances(4, seed):
        assert_matches_reference(spec, x)


@pytest.mark.parametrize("tokens", [[7], [3, 4], list(range(40))])
def test_short_and_long_sequences(spec, tokens):
    assert_matches_reference(spec, from_list(tokens))


def test_empty_sequence_gives_no_logits(spec):
    x = from_list([])
    assert to_list(spec.evaluate(x)) == [] == to_list(spec.reference(x))


def test_long_sequence_at_tiny():
    spec = load("birnn", "tiny")
    assert_matches_reference(spec, from_list([i % 50 for i in range(500)]))


def test_reversed_input_with_swapped_directions_gives_reversed_logits():
    """Swap the forward and backward weights (and the classifier's halves): the reversed
    sentence must then give the per-token logits in reverse order. This pins down the
    re-reversal of the backward states without the NumPy reference."""
    spec = load("birnn", "tiny", seed=3)
    h = spec.sizes["H"]
    p = dict(spec.params)
    for w in ("W", "U", "b"):
        p[f"{w}_fw"], p[f"{w}_bw"] = spec.params[f"{w}_bw"], spec.params[f"{w}_fw"]
    p["W_c"] = np.hstack([spec.params["W_c"][:, h:], spec.params["W_c"][:, :h]])
    tokens = [int(t) for t in np.random.default_rng(0).integers(0, 50, 12)]
    want = to_list(spec.evaluate(from_list(tokens)))[::-1]
    got = to_list(evaluate(spec.module, from_list(tokens[::-1]), p))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "bad",
    [
        from_list([1, 2, 50]),  # token id == V at tiny
        from_list([-1]),  # negative token id
        from_list([1.0, 2.0]),  # not ints
        [1, 2, 3],  # a Python list, not a List value
        V("Cons", (1,)),  # Cons with one field
        V("Leaf", (1,)),  # a constructor of another type
    ],
)
def test_bad_instance_is_named_by_index(bad):
    assert_bad_instance_named(load("birnn", "tiny"), bad)
