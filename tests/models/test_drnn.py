"""DRNN: generated trees agree with the plain-NumPy reference; shapes vary; bad inputs."""

import numpy as np
import pytest

from acrobat.baselines.reference.drnn import generate
from acrobat.models import load
from tests.models.conftest import (
    SIZES,
    assert_bad_instance_named,
    assert_close,
    assert_ir_round_trips,
)

MODES = ["tensor", "random"]
MAX_NODES = 1 + 3 + 9 + 27  # MAX_DEPTH 4, MAX_WIDTH 3


def assert_matches_reference(spec, x):
    (got, n), (want, m) = spec.evaluate(x), spec.reference(x)
    assert n == m and 1 <= n <= MAX_NODES
    assert_close(got, want, (spec.sizes["H"],))
    return n


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_matches_reference(size, mode, seed):
    spec = load("drnn", size, mode, seed=seed)
    for x in spec.instances(6, seed):
        assert_matches_reference(spec, x)


@pytest.mark.parametrize("mode", MODES)
def test_one_node_and_full_trees_match_reference(mode):
    """The extremes occur and agree: a lone root, and trees grown to the depth and width caps."""
    spec = load("drnn", "tiny", mode)
    counts, depths, widths = set(), set(), set()
    for x in spec.instances(60, seed=5):
        counts.add(assert_matches_reference(spec, x))
        shape = generate(spec.params, x, mode)[2]
        depths.add(max(d for d, _ in shape))
        widths.update(w for _, w in shape[1:])
    assert 1 in counts and 4 in depths and 3 in widths


@pytest.mark.parametrize("size", ["tiny", "small"])
def test_tensor_decisions_give_different_tree_shapes_in_one_batch(size):
    spec = load("drnn", size)
    batch = spec.instances(8, seed=0)
    counts = [spec.evaluate(x)[1] for x in batch]
    shapes = {tuple(generate(spec.params, x)[2]) for x in batch}
    assert len(set(counts)) >= 2 and len(shapes) >= 2, counts


def test_tree_shapes_respect_the_caps_and_spread():
    spec = load("drnn", "tiny")
    counts = []
    for x in spec.instances(40, seed=9):
        _, n, shape = generate(spec.params, x)
        assert n == len(shape) and shape[0] == (1, 3)
        assert all(1 <= d <= 4 and 1 <= w <= 3 for d, w in shape)
        counts.append(n)
    assert min(counts) == 1 and max(counts) >= 20 and len(set(counts)) >= 8


def test_random_decisions_follow_the_seed_not_the_tensors():
    """Same seed, different root vectors: the same tree shape."""
    spec = load("drnn", "tiny", "random")
    (a, f, s), (b, g, _) = spec.instances(2, seed=3)
    shape = generate(spec.params, (a, f, s), "random")[2]
    assert generate(spec.params, (b, g, s), "random")[2] == shape
    assert spec.evaluate((b, g, s))[1] == len(shape)


def test_both_modes_share_weights_and_verify():
    t, r = load("drnn", "tiny", "tensor"), load("drnn", "tiny", "random")
    assert t.params.keys() == r.params.keys()
    assert all(np.array_equal(t.params[k], r.params[k]) for k in t.params)
    assert_ir_round_trips(r.module)


H = 8
GOOD = np.zeros(H, np.float32)


@pytest.mark.parametrize(
    "mode, bad",
    [
        ("tensor", (GOOD, np.zeros(H + 1, np.float32))),  # wrong length
        ("tensor", (GOOD, np.zeros(H, np.float64))),  # wrong dtype
        ("tensor", GOOD),  # one vector, not a pair
        ("random", (GOOD, GOOD)),  # the seed is missing
        ("random", (GOOD, GOOD, -1)),  # negative seed
        ("random", (GOOD, GOOD, 2**31)),  # seed too large
        ("random", (GOOD, GOOD, 1.5)),  # not an int
    ],
)
def test_bad_instance_is_named_by_index(mode, bad):
    assert_bad_instance_named(load("drnn", "tiny", mode), bad)
