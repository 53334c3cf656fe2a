"""Binary TreeLSTM: the interpreter agrees with the plain-NumPy reference; bad inputs are named."""

import numpy as np
import pytest

from acrobat import AdtValue as V
from acrobat import InstanceError
from acrobat.models import data, load

RTOL, ATOL = 1e-5, 1e-6  # float32 tolerance: both sides compute in float32, in different orders
SIZES = ["tiny", "small", pytest.param("large", marks=pytest.mark.slow)]


@pytest.fixture(scope="module", params=SIZES)
def spec(request):
    return load("treelstm", request.param)


def assert_matches_reference(spec, x):
    y = spec.evaluate(x)
    assert y.shape == (spec.sizes["H"],) and y.dtype == np.float32
    np.testing.assert_allclose(y, spec.reference(x), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sst_batch_matches_reference(spec, seed):
    for x in spec.instances(4, seed):
        assert_matches_reference(spec, x)


def test_one_leaf_tree(spec):
    assert_matches_reference(spec, V("Leaf", (7,)))


def test_complete_tree_of_height_4(spec):
    assert_matches_reference(spec, data.complete_tree(4, lambda i: (5 * i) % spec.sizes["V"]))


def test_thousand_deep_degenerate_tree_at_tiny():
    spec = load("treelstm", "tiny")
    assert_matches_reference(spec, data.degenerate_tree(1000, lambda i: i % spec.sizes["V"]))


def test_other_weight_seed_matches_reference():
    spec = load("treelstm", "tiny", seed=7)
    for x in spec.instances(3, seed=4):
        assert_matches_reference(spec, x)


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
    spec = load("treelstm", "tiny")
    good = spec.instances(2, seed=0)
    with pytest.raises(InstanceError) as err:
        spec.check([*good, bad])
    assert err.value.index == 2
