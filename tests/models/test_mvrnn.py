"""MV-RNN: the interpreter agrees with the plain-NumPy reference; bad inputs are named."""

import numpy as np
import pytest

from acrobat import AdtValue as V
from acrobat.models import data, load, mvrnn
from tests.models.conftest import assert_bad_instance_named, assert_state_matches_reference

MODEL = "mvrnn"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sst_batch_matches_reference(spec, seed):
    for x in spec.instances(4, seed):
        assert_state_matches_reference(spec, x)


def test_one_leaf_returns_its_word_vector(spec):
    x = V("Leaf", (7,))
    assert_state_matches_reference(spec, x)
    np.testing.assert_array_equal(spec.evaluate(x), spec.params["E"][7])


def test_complete_tree_of_height_4(spec):
    assert_state_matches_reference(spec, data.complete_tree(4, lambda i: (3 * i) % spec.sizes["V"]))


def test_deep_degenerate_tree_at_tiny():
    spec = load("mvrnn", "tiny")
    assert_state_matches_reference(spec, data.degenerate_tree(500, lambda i: i % spec.sizes["V"]))


def test_other_weight_seed_matches_reference():
    spec = load("mvrnn", "tiny", seed=5)
    for x in spec.instances(3, seed=9):
        assert_state_matches_reference(spec, x)


def test_word_matrices_start_near_identity(spec):
    h = spec.sizes["H"]
    em = spec.params["EM"].reshape(-1, h, h)
    assert np.abs(em - np.eye(h)).max() <= mvrnn.NOISE + 1e-6  # + float32 rounding
    half = 0.5 * np.hstack([np.eye(h), np.eye(h)])
    assert np.abs(spec.params["W_M"] - half).max() <= mvrnn.NOISE + 1e-6


@pytest.mark.parametrize(
    "bad",
    [
        V("NNode", (1, V("Nil", ()))),  # a constructor of another type
        V("Leaf", (50_000,)),  # word id outside every vocabulary
        V("Node", (V("Leaf", (1,)), V("Leaf", (-1,)))),  # negative word id
        V("Leaf", (1.5,)),  # not an int
        V("Node", (V("Leaf", (1,)),)),  # Node with one field
        np.zeros(4, np.float32),  # not a tree at all
    ],
)
def test_bad_instance_is_named_by_index(bad):
    assert_bad_instance_named(load("mvrnn", "tiny"), bad)
