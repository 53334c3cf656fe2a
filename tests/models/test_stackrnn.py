"""StackRNN: shift-reduce parses agree with the plain-NumPy reference; predicted
transition sequences vary; bad tokens and bad transition sequences are rejected."""

import numpy as np
import pytest

from acrobat import AdtValue as V
from acrobat import from_list, to_list
from acrobat.baselines.reference.stackrnn import parse
from acrobat.models import data, load
from tests.models.conftest import (
    ATOL,
    RTOL,
    SIZES,
    assert_bad_instance_named,
    assert_close,
    assert_ir_round_trips,
)

SHIFT, REDUCE = 0, 1


def assert_matches_reference(spec, x):
    got, want = spec.evaluate(x), spec.reference(x)
    assert_close(got, want, (spec.sizes["H"],))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", ["tensor", "random"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sst_batch_matches_reference(size, mode, seed):
    spec = load("stackrnn", size, mode, seed=seed)
    for x in spec.instances(4, seed):
        assert_matches_reference(spec, x)


@pytest.mark.parametrize("size", ["tiny", "small"])
@pytest.mark.parametrize(
    "tokens, transitions",
    [
        ([7], [SHIFT]),  # the smallest parse: one token, one state
        ([3, 4], [SHIFT, SHIFT, REDUCE]),
        ([1, 2, 3], [SHIFT, SHIFT, SHIFT, REDUCE, REDUCE]),  # right-branching
        ([1, 2, 3], [SHIFT, SHIFT, REDUCE, SHIFT, REDUCE]),  # left-branching
    ],
)
def test_short_parses_in_both_modes(size, tokens, transitions):
    spec_t, spec_r = load("stackrnn", size, "tensor"), load("stackrnn", size, "random")
    assert_matches_reference(spec_t, from_list(tokens))
    assert_matches_reference(spec_r, (from_list(tokens), from_list(transitions)))


def test_one_token_is_its_shift_state():
    spec = load("stackrnn", "tiny")
    p = spec.params
    want = np.tanh(p["W_s"] @ p["E"][7] + p["b_s"])
    np.testing.assert_allclose(spec.evaluate(from_list([7])), want, rtol=RTOL, atol=ATOL)


def test_long_sequences_at_tiny():
    rng = np.random.default_rng(0)
    tokens = [int(t) for t in rng.integers(0, 50, 120)]
    assert_matches_reference(load("stackrnn", "tiny"), from_list(tokens))
    spec = load("stackrnn", "tiny", "random")
    ts = from_list(data.shift_reduce(rng, len(tokens)))
    assert_matches_reference(spec, (from_list(tokens), ts))


@pytest.mark.parametrize("size", ["tiny", "small"])
def test_tensor_decisions_give_different_transitions_in_one_batch(size):
    """Eight sentences of the SAME length parse differently. The tensor-mode program took
    those paths: replaying each predicted sequence in random mode (same weights) gives
    the same final state."""
    spec_t, spec_r = load("stackrnn", size, "tensor"), load("stackrnn", size, "random")
    rng = np.random.default_rng(0)
    n, v = 12, spec_t.sizes["V"]
    paths = set()
    for _ in range(8):
        tokens = [int(t) for t in rng.integers(0, v, n)]
        _, taken = parse(spec_t.params, tokens)
        assert data.valid_transitions(taken, n) is None
        paths.add(tuple(taken))
        replay = spec_r.evaluate((from_list(tokens), from_list(taken)))
        np.testing.assert_array_equal(spec_t.evaluate(from_list(tokens)), replay)
    assert len(paths) >= 2, paths


def test_open_choices_are_split_between_shift_and_reduce():
    """Where both transitions are allowed, neither one always wins."""
    spec = load("stackrnn", "tiny")
    choices = []
    for x in spec.instances(40, seed=3):
        tokens = to_list(x)
        stack, left = 0, len(tokens)
        for t in parse(spec.params, tokens)[1]:
            if left and stack >= 2:
                choices.append(t)
            stack, left = (stack + 1, left - 1) if t == SHIFT else (stack - 1, left)
    assert 0.2 < np.mean(choices) < 0.8


def test_both_modes_share_weights_and_verify():
    t, r = load("stackrnn", "tiny", "tensor"), load("stackrnn", "tiny", "random")
    assert all(np.array_equal(t.params[k], r.params[k]) for k in t.params)
    assert_ir_round_trips(r.module)


OK = from_list([1, 2])
OK_T = from_list([SHIFT, SHIFT, REDUCE])


@pytest.mark.parametrize(
    "mode, bad",
    [
        ("tensor", from_list([1, 2, 50])),  # token id == V at tiny
        ("tensor", from_list([-1])),  # negative token id
        ("tensor", from_list([])),  # no tokens
        ("tensor", from_list([1.0, 2.0])),  # not ints
        ("tensor", V("Leaf", (1,))),  # a constructor of another type
        ("tensor", [1, 2]),  # a Python list, not a List value
        ("random", OK),  # the transitions are missing
        ("random", (OK, from_list([REDUCE, SHIFT, SHIFT]))),  # REDUCE on an empty stack
        ("random", (OK, from_list([SHIFT, SHIFT]))),  # ends with two states
        ("random", (OK, from_list([SHIFT, SHIFT, REDUCE, SHIFT]))),  # SHIFT with no tokens
        ("random", (OK, from_list([SHIFT, SHIFT, 2]))),  # neither SHIFT nor REDUCE
        ("random", (from_list([1, 99]), OK_T)),  # token out of vocabulary
        ("random", (from_list([]), from_list([]))),  # no tokens
    ],
)
def test_bad_instance_is_named_by_index(mode, bad):
    assert_bad_instance_named(load("stackrnn", "tiny", mode), bad)
