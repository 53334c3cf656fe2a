"""The contributor docs stay true to the code: every file path and every ``acrobat.…`` name
written in ``docs/*.md`` and ``README.md`` exists, and nothing in the repository points outside it."""

from __future__ import annotations

import importlib
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
TOP = ("acrobat/", "apps/", "docs/", "notebooks/", "scripts/", "tests/", "tutorials/")

# `acrobat/ir/ops.py`, `tests/test_docs.py` ... inside backticks
PATH = re.compile(r"`((?:" + "|".join(re.escape(t) for t in TOP) + r")[\w./-]*)`")
# [text](relative/target#anchor)
LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")
# `acrobat.ir.ops.REGISTRY`, `acrobat.run(...)` ... inside backticks
NAME = re.compile(r"`(acrobat(?:\.\w+)+)")


def _resolve(dotted: str):
    """Import the longest module prefix of ``dotted``, then getattr the rest."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_paths_in_docs_exist(doc):
    text = doc.read_text()
    missing = [p for p in PATH.findall(text) if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"{doc.name} names files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_in_docs_resolve(doc):
    missing = [t for t in LINK.findall(doc.read_text()) if not (doc.parent / t).exists()]
    assert not missing, f"{doc.name} links to files that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_acrobat_names_in_docs_exist(doc):
    bad = []
    for name in sorted(set(NAME.findall(doc.read_text()))):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as e:
            bad.append(f"{name} ({e})")
    assert not bad, f"{doc.name} names what the package does not have: {bad}"


def test_architecture_recipes_name_real_things():
    """The recipes' key names, spelled as the code spells them."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    from acrobat.backends import register_backend
    from acrobat.codegen.elementwise import define_elementwise_op
    from acrobat.passes.base import Facts, Property, map_host_functions
    from acrobat.runtime.schedule import register_policy
    from acrobat.viz.explorer import register_view

    for fn in (register_backend, define_elementwise_op, map_host_functions, register_policy):
        assert fn.__name__ in text
    assert register_view.__name__ in text and Facts.__name__ in text
    for prop in Property:
        assert f"`{prop.value}`" in text or prop.value in text


def test_nothing_points_outside_the_repository():
    """No file refers to notes that live outside the repository."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.sh", "*.toml", "*.yml", "*.ipynb", "Makefile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    pattern = re.compile(r"\.\./shared|DESIGN\.md|PAPER\.md")
    me = pathlib.Path(__file__).resolve()
    hits = [
        f
        for f in files
        if (ROOT / f).resolve() != me and pattern.search((ROOT / f).read_text(errors="replace"))
    ]
    assert not hits, f"these files point outside the repository: {hits}"
