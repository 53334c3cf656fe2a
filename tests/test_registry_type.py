"""acrobat.registry.Registry: the one behaviour behind every registry (ops, policies,
backends, explorer views)."""

import pytest

from acrobat.errors import AcrobatNameError
from acrobat.registry import Registry


def test_entries_in_registration_order():
    r: Registry[int] = Registry("widget")
    assert r.add("b", 2) == 2 and r.add("a", 1) == 1
    assert r.names() == ("b", "a") and r.lookup("a") == 1 and dict(r) == {"b": 2, "a": 1}


def test_a_second_registration_is_refused_and_names_the_kind():
    r: Registry[int] = Registry("widget")
    r.add("x", 1)
    with pytest.raises(AcrobatNameError, match="widget 'x' is registered twice"):
        r.add("x", 2)
    with pytest.raises(AcrobatNameError, match="registered twice"):
        r.check_free("x")
    assert r.lookup("x") == 1


@pytest.mark.parametrize("name", ["nope", ["unhashable"]])
def test_an_unknown_name_lists_the_known_ones(name):
    r: Registry[int] = Registry("widget")
    r.add("x", 1)
    with pytest.raises(AcrobatNameError, match="unknown widget") as e:
        r.lookup(name)
    assert "('x',)" in e.value.hint
    with pytest.raises(AcrobatNameError, match="unknown widget"):
        r.remove("nope")


def test_remove_returns_the_entry():
    r: Registry[int] = Registry("widget")
    r.add("x", 1)
    assert r.remove("x") == 1 and r.names() == ()


def test_every_acrobat_registry_is_one():
    from acrobat.backends import _BACKENDS
    from acrobat.ir.ops import REGISTRY
    from acrobat.runtime.schedule import _POLICIES

    for reg, what in ((REGISTRY, "op"), (_POLICIES, "policy"), (_BACKENDS, "backend")):
        assert isinstance(reg, Registry) and reg.what == what
