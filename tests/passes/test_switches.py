"""The described switches of CompileOptions (label, what, passes) agree with the code."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest

from acrobat.compiler import default_passes
from acrobat.errors import AcrobatNameError
from acrobat.passes.options import OPT_IN, OPTIMIZATIONS, SWITCHES, CompileOptions


def test_one_switch_per_boolean_field_with_its_default():
    booleans = [f for f in dataclasses.fields(CompileOptions) if isinstance(f.default, bool)]
    assert [s.name for s in SWITCHES] == [f.name for f in booleans]
    assert all(s.default is f.default for s, f in zip(SWITCHES, booleans))
    assert tuple(s.name for s in SWITCHES) == OPTIMIZATIONS + OPT_IN
    assert OPT_IN == ()  # leveling was opt-in until it cost next to nothing
    assert CompileOptions.switches() is SWITCHES


def test_labels_are_human_and_distinct():
    labels = [s.label for s in SWITCHES]
    assert len(set(labels)) == len(labels)
    for s in SWITCHES:
        assert "_" not in s.label and s.label[0].isupper()
        assert s.what.endswith(".") and len(s.what) > 30
    assert CompileOptions.switch("fusion").label == "Op fusion"
    with pytest.raises(AcrobatNameError, match="unknown option"):
        CompileOptions.switch("vectorize")


def _options_read(cls) -> set[str]:
    """The boolean options a pass class reads (``ctx.options.<name>``), from its source."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))
    names = {s.name for s in SWITCHES}
    reads = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "options"
            and node.attr in names
        ):
            reads.add(node.attr)
    return reads


def test_each_switch_names_exactly_the_passes_that_read_it():
    by_name = {p.name: type(p) for p in default_passes()}
    declared = {s.name: set(s.passes) for s in SWITCHES}
    read = {
        s.name: {name for name, cls in by_name.items() if s.name in _options_read(cls)}
        for s in SWITCHES
    }
    assert declared == read
    for s in SWITCHES:
        assert set(s.passes) <= set(by_name), s.name
