"""Shared by the model tests: tolerances, sizes, the `spec` fixture and the common checks.

A test module that sets ``MODEL = "<name>"`` gets a module-scoped ``spec`` fixture: the model
loaded at each size (``large`` is marked slow). The checks are plain functions, imported with
``from tests.models.conftest import ...``.
"""

import numpy as np
import pytest

from acrobat import InstanceError
from acrobat.ir.parser import parse_module
from acrobat.ir.printer import print_module
from acrobat.ir.verify import verify
from acrobat.models import load

RTOL, ATOL = 1e-5, 1e-6  # float32 tolerance: both sides compute in float32, in different orders
SIZES = ["tiny", "small", pytest.param("large", marks=pytest.mark.slow)]


@pytest.fixture(scope="module", params=SIZES)
def spec(request):
    """The test module's ``MODEL`` at each size, loaded once per module and size."""
    return load(request.module.MODEL, request.param)


def assert_close(got, want, shape: tuple[int, ...]) -> None:
    """``got`` is a float32 tensor of ``shape`` equal to ``want`` within float32 tolerance."""
    assert got.shape == shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def assert_state_matches_reference(spec, x) -> None:
    """For models whose output is one hidden state of size H: interpreter == reference."""
    assert_close(spec.evaluate(x), spec.reference(x), (spec.sizes["H"],))


def assert_bad_instance_named(spec, bad) -> None:
    """Two good instances and then ``bad``: the InstanceError names index 2."""
    good = spec.instances(2, seed=0)
    with pytest.raises(InstanceError) as err:
        spec.check([*good, bad])
    assert err.value.index == 2


def assert_ir_round_trips(module) -> None:
    """The module verifies and reads back equal from its printed text."""
    verify(module)
    assert parse_module(print_module(module)) == module
