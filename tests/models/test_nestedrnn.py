"""NestedRNN: the interpreter agrees with the plain-NumPy reference, empty lists included."""

import numpy as np
import pytest

from acrobat import from_list, to_list
from acrobat.models import load
from tests.models.conftest import assert_bad_instance_named, assert_state_matches_reference

MODEL = "nestedrnn"


def graph(nodes):
    """A ``List[List[int]]`` from Python lists of edge ids."""
    return from_list([from_list(edges) for edges in nodes])


def to_py(x):
    """The Python lists of edge ids of a graph."""
    return [to_list(e) for e in to_list(x)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_graphs_match_reference(spec, seed):
    for x in spec.instances(4, seed):
        assert_state_matches_reference(spec, x)


@pytest.mark.parametrize(
    "nodes",
    [[[5]], [[]], [[], [], []], [[1, 2, 3], [], [4]], [[i % 50 for i in range(30)]]],
    ids=["one-edge", "one-node-no-edges", "no-edges", "mixed", "long-inner"],
)
def test_small_and_empty_inner_lists(spec, nodes):
    assert_state_matches_reference(spec, graph(nodes))


def test_graph_without_nodes_returns_the_zero_state(spec):
    y = spec.evaluate(graph([]))
    np.testing.assert_array_equal(y, np.zeros(spec.sizes["H"], np.float32))
    np.testing.assert_array_equal(spec.reference(graph([])), y)


def test_long_outer_list_at_tiny():
    spec = load("nestedrnn", "tiny")
    assert_state_matches_reference(spec, graph([[k % 50] * (k % 4) for k in range(300)]))


def test_default_counts_cover_the_documented_ranges():
    spec = load("nestedrnn", "tiny")
    xs = spec.instances(200, seed=0)
    outer = [len(to_py(x)) for x in xs]
    inner = [len(e) for x in xs for e in to_py(x)]
    assert min(outer) == 1 and max(outer) == 20
    assert min(inner) == 0 and max(inner) == 10


@pytest.mark.parametrize(
    "bad",
    [
        graph([[1], [50]]),  # edge id == V at tiny
        graph([[-3]]),  # negative edge id
        from_list([1, 2]),  # List[int], not List[List[int]]
        from_list([from_list([1.5])]),  # not ints
        [[1, 2]],  # Python lists, not List values
    ],
)
def test_bad_instance_is_named_by_index(bad):
    assert_bad_instance_named(load("nestedrnn", "tiny"), bad)
