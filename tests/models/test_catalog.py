"""The model zoo's facade: catalog entries, name errors, and seeded instances."""

import pytest

import acrobat
from acrobat import AcrobatNameError, InstanceError, values_equal
from acrobat.models import MODEL_NAMES, VARIANTS, catalog, load
from tests.models.conftest import assert_ir_round_trips

PAPER_MODELS = ("treelstm", "mvrnn", "birnn", "nestedrnn", "drnn", "berxit", "stackrnn")
ALL = PAPER_MODELS + ("treelstm_childsum",)


def test_catalog_lists_the_paper_models_and_the_variant():
    assert set(MODEL_NAMES) == set(PAPER_MODELS) and VARIANTS == ("treelstm_childsum",)
    entries = catalog()
    assert [e.name for e in entries] == list(ALL)
    for e in entries:
        assert e.description and e.default_data, e.name
        assert e.features and all(isinstance(f, str) and f for f in e.features), e.name
        assert e.sizes == ("tiny", "small", "large"), e.name
        assert e.decisions in (("tensor",), ("tensor", "random")), e.name


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": "lstm"},
        {"name": "treelstm", "size": "huge"},
        {"name": "treelstm", "decisions": "random"},
        {"name": "mvrnn", "decisions": "coin"},
    ],
    ids=["model", "size", "decisions-of-a-tensor-only-model", "decisions"],
)
def test_unknown_names_raise_name_errors(kwargs):
    with pytest.raises(AcrobatNameError):
        load(**kwargs)


def test_name_error_is_an_acrobat_error_with_a_hint():
    with pytest.raises(acrobat.AcrobatError) as err:
        load("lstm")
    assert "treelstm" in (err.value.hint or "")


@pytest.fixture(scope="module", params=ALL)
def spec(request):
    return load(request.param, "tiny")


def test_zero_instances_is_empty_and_negative_is_an_error(spec):
    assert spec.instances(0) == []
    with pytest.raises(InstanceError):
        spec.instances(-1)


def test_instances_are_seeded(spec):
    a, b, c = spec.instances(6, seed=11), spec.instances(6, seed=11), spec.instances(6, seed=12)
    # values_equal walks tuples (not lists) structurally
    assert len(a) == 6 and values_equal(tuple(a), tuple(b))
    assert not values_equal(tuple(a), tuple(c))
    spec.check(a)


def test_module_verifies_and_round_trips_through_text(spec):
    assert_ir_round_trips(spec.module)
