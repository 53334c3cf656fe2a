"""Values: equality, and the checks of instances against the entry's signature."""

import pytest

from acrobat.errors import InstanceError
from acrobat.ir.values import entry_args, entry_args_all
from acrobat.models import MODEL_NAMES, load


def test_values_equal_compares_host_floats_with_the_tolerances():
    from acrobat import values_equal

    assert not values_equal(0.6204199, 0.6204200)  # exact by default, as before
    assert values_equal(0.6204199, 0.6204200, rtol=1e-5)
    assert values_equal((1.0, float("nan")), (1.0 + 1e-9, float("nan")), atol=1e-6)
    assert not values_equal(1.0, 1.1, rtol=1e-3, atol=1e-4)
    assert values_equal(3, 3.0) and not values_equal(3, 4, rtol=0.5)  # ints stay exact


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_entry_args_all_is_entry_args_of_each_instance(name):
    """The checks of many instances at once give what checking them one by one gives:
    the same arguments, and for a bad instance the same error naming the same index."""
    spec = load(name, "tiny")
    xs = spec.instances(5, seed=3)
    m = spec.module
    got, want = entry_args_all(m, xs), [entry_args(m, x, i) for i, x in enumerate(xs)]
    assert len(got) == len(want) == len(xs)
    for g, w in zip(got, want):  # the instances' own objects, as entry_args gives them
        assert len(g) == len(w) and all(a is b for a, b in zip(g, w))
    bad = [xs[0], xs[1], "not an instance", xs[2]]
    errors = []
    for check in (
        lambda: entry_args_all(m, bad),
        lambda: [entry_args(m, x, i) for i, x in enumerate(bad)],
    ):
        with pytest.raises(InstanceError) as e:
            check()
        errors.append(e.value)
    assert str(errors[0]) == str(errors[1]) and errors[0].index == errors[1].index == 2
