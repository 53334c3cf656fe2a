"""Binary TreeLSTM: the interpreter agrees with the plain-NumPy reference; bad inputs are named."""

import pytest

from acrobat import AdtValue as V
from acrobat.models import data, load
from tests.models.conftest import assert_bad_instance_named, assert_state_matches_reference

MODEL = "treelstm"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sst_batch_matches_reference(spec, seed):
    for x in spec.instances(4, seed):
        assert_state_matches_reference(spec, x)


def test_one_leaf_tree(spec):
    assert_state_matches_reference(spec, V("Leaf", (7,)))


def test_complete_tree_of_height_4(spec):
    assert_state_matches_reference(spec, data.complete_tree(4, lambda i: (5 * i) % spec.sizes["V"]))


def test_thousand_deep_degenerate_tree_at_tiny():
    spec = load("treelstm", "tiny")
    assert_state_matches_reference(spec, data.degenerate_tree(1000, lambda i: i % spec.sizes["V"]))


def test_other_weight_seed_matches_reference():
    spec = load("treelstm", "tiny", seed=7)
    for x in spec.instances(3, seed=4):
        assert_state_matches_reference(spec, x)


@pytest.mark.parametrize(
    "bad",
    [
        V("NNode", (1, V("Nil", ()))),  # a constructor of another type
        V("Node", (V("Leaf", (1,)), V("Leaf", (50,)))),  # word id == V at tiny
        V("Leaf", (-2,)),  # negative word id
        V("Leaf", ("the",)),  # a word, not a word id
        V("Node", (V("Leaf", (1,)),)),  # Node with one field
    ],
)
def test_bad_instance_is_named_by_index(bad):
    assert_bad_instance_named(load("treelstm", "tiny"), bad)
