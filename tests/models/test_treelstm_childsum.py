"""Child-sum TreeLSTM: the interpreter agrees with the plain-NumPy reference on n-ary trees."""

import numpy as np
import pytest

from acrobat import AdtValue as V
from acrobat import from_list, to_list
from acrobat.models import data, load
from tests.models.conftest import (
    ATOL,
    RTOL,
    assert_bad_instance_named,
    assert_state_matches_reference,
)

MODEL = "treelstm_childsum"


def node(word, *children):
    return V("NNode", (word, from_list(children)))


def chain(depth, vocab):
    """A root with one child, with one child, ... ``depth`` nodes below the root."""
    t = node(0)
    for i in range(depth):
        t = node((i + 1) % vocab, t)
    return t


def complete(height, arity):
    """Every inner node has ``arity`` children; leaves at depth ``height``."""
    level = [node(i) for i in range(arity**height)]
    while len(level) > 1:
        level = [node(k, *level[k * arity : (k + 1) * arity]) for k in range(len(level) // arity)]
    return level[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_nary_batch_matches_reference(spec, seed):
    for x in spec.instances(4, seed):
        assert_state_matches_reference(spec, x)


@pytest.mark.parametrize(
    "tree",
    [node(3), node(1, node(2)), node(1, node(2), node(3), node(4), node(5)), complete(3, 3)],
    ids=["one-node", "one-child", "four-children", "complete-3-ary"],
)
def test_small_shapes(spec, tree):
    assert_state_matches_reference(spec, tree)


def test_thousand_deep_chain_at_tiny():
    spec = load("treelstm_childsum", "tiny")
    assert_state_matches_reference(spec, chain(1000, spec.sizes["V"]))


def test_child_order_does_not_matter():
    spec = load("treelstm_childsum", "tiny", seed=2)
    kids = [node(5, node(6)), node(7), node(8, node(9), node(10))]
    a = spec.evaluate(node(1, *kids))
    b = spec.evaluate(node(1, *kids[::-1]))
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_default_trees_have_one_to_four_children():
    counts, rng = set(), np.random.default_rng(0)
    for _ in range(50):
        stack = [data.nary_tree(rng, 50)]
        while stack:
            kids = to_list(stack.pop().fields[1])
            counts.add(len(kids))
            stack += kids
    assert counts == {0, 1, 2, 3, 4}


@pytest.mark.parametrize(
    "bad",
    [
        V("Leaf", (1,)),  # a constructor of another type
        node(1, node(50)),  # word id == V at tiny
        node(-1),  # negative word id
        V("NNode", (1, node(2))),  # children not a List
        V("NNode", (1,)),  # NNode with one field
    ],
)
def test_bad_instance_is_named_by_index(bad):
    assert_bad_instance_named(load("treelstm_childsum", "tiny"), bad)
