"""Berxit: early-exit encoder agrees with the plain-NumPy reference; exit depths vary."""

import functools

import numpy as np
import pytest

from acrobat import evaluate
from acrobat.models import berxit, load
from tests.models.conftest import (
    ATOL,
    RTOL,
    assert_bad_instance_named,
    assert_close,
    assert_ir_round_trips,
)

C, LAYERS = 2, 6


@functools.cache
def spec(size, mode="tensor"):
    """One load per size and mode: the small weights are ~170 MB, built once."""
    return load("berxit", size, mode)


def assert_matches_reference(s, x):
    (got, n), (want, m) = s.evaluate(x), s.reference(x)
    assert n == m and 1 <= n <= LAYERS
    assert_close(got, want, (C,))
    return n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiny_batch_matches_reference(seed):
    for mode in ("tensor", "random"):
        s = load("berxit", "tiny", mode, seed=seed)
        for x in s.instances(8, seed):
            assert_matches_reference(s, x)


@pytest.mark.parametrize("exit_layer", range(1, LAYERS + 1))
def test_every_random_exit_layer_matches_reference_at_tiny(exit_layer):
    s = spec("tiny", "random")
    x = s.instances(1, seed=exit_layer)[0][0]
    assert assert_matches_reference(s, (x, exit_layer)) == exit_layer


@pytest.mark.parametrize("mode", ["tensor", "random"])
def test_small_batch_matches_reference(mode):
    for x in spec("small", mode).instances(3, seed=1):
        assert_matches_reference(spec("small", mode), x)


@pytest.mark.parametrize("exit_layer", [1, LAYERS])
def test_small_shortest_and_longest_exit_match_reference(exit_layer):
    x = spec("small", "random").instances(1, seed=2)[0][0]
    assert assert_matches_reference(spec("small", "random"), (x, exit_layer)) == exit_layer


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tensor", "random"])
def test_large_matches_reference(mode):
    s = load("berxit", "large", mode)
    assert_matches_reference(s, s.instances(1, seed=0)[0])


def test_tensor_exit_depths_vary_in_one_batch_at_tiny():
    depths = [spec("tiny").evaluate(x)[1] for x in spec("tiny").instances(8, seed=0)]
    assert len(set(depths)) >= 3, depths


def test_tensor_exit_depths_vary_in_one_batch_at_small():
    depths = [spec("small").evaluate(x)[1] for x in spec("small").instances(8, seed=0)]
    assert len(set(depths)) >= 2, depths


def test_tensor_exit_agrees_with_random_mode_at_the_same_layer():
    """Both modes share the weights: forcing the exit layer the tensor mode chose gives
    the same logits, so the tensor-mode program really stopped there."""
    t, r = spec("tiny"), spec("tiny", "random")
    assert all(np.array_equal(t.params[k], r.params[k]) for k in t.params)
    for x in t.instances(8, seed=4):
        logits, n = t.evaluate(x)
        forced, m = r.evaluate((x, n))
        assert m == n
        np.testing.assert_array_equal(logits, forced)


def test_random_mode_verifies_and_round_trips():
    assert_ir_round_trips(spec("tiny", "random").module)


def test_source_is_the_full_program():
    src = berxit.source("tensor")
    for layer in range(1, LAYERS + 1):
        assert f"W_qkv_{layer}: Param[3 * D, D]" in src
    assert src.count("if confident(") == LAYERS - 1
    assert berxit.source("random").count("if exit_layer == ") == LAYERS - 1


def test_layer_norm_weights_start_at_one_and_zero():
    p = spec("tiny").params
    assert np.all(p["g_att_3"] == 1) and np.all(p["be_ffn_6"] == 0) and np.all(p["b_qkv_1"] == 0)


def test_zero_input_runs_all_layers_deterministically():
    s = spec("tiny")
    x = np.zeros((8, 16), np.float32)
    (a, n), (b, m) = evaluate(s.module, x, s.params), s.reference(x)
    assert n == m == LAYERS  # zero logits: confidence 0.5 never passes the threshold
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


S, D = 8, 16
GOOD = np.zeros((S, D), np.float32)


@pytest.mark.parametrize(
    "mode, bad",
    [
        ("tensor", np.zeros((S, D + 1), np.float32)),  # wrong model width
        ("tensor", np.zeros((S + 1, D), np.float32)),  # wrong sequence length
        ("tensor", np.zeros((S, D), np.float64)),  # wrong dtype
        ("tensor", np.full((S, D), np.nan, np.float32)),  # not finite
        ("random", GOOD),  # the exit layer is missing
        ("random", (GOOD, 0)),  # exit layer below 1
        ("random", (GOOD, LAYERS + 1)),  # exit layer above 6
        ("random", (GOOD, 2.0)),  # not an int
    ],
)
def test_bad_instance_is_named_by_index(mode, bad):
    assert_bad_instance_named(spec("tiny", mode), bad)
