"""pyproject.toml and environment.yml declare the same dependencies (base, numba, viz, gpu, dev); the
base needs none of the GUI stack, which is the `viz` extra that the Makefile installs."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# PyPI name -> conda-forge name, where the two differ.
PYPI_TO_CONDA = {
    "graphviz": "python-graphviz",  # the Python bindings; conda's `graphviz` is the dot binary
    "cupy-cuda12x": "cupy",  # conda-forge picks the CUDA build itself
}
# conda entries with no PyPI counterpart in pyproject.toml.
CONDA_ONLY = {"python", "pip", "graphviz"}
CHECKED_EXTRAS = ("numba", "viz", "gpu", "dev")
ALL_EXTRAS = {"numba", "viz", "gpu", "dev", "peers"}
GUI_PACKAGES = {"panel", "bokeh", "param", "ipywidgets", "graphviz", "pygments"}
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*([<>=!~].*)?$")


def normalize(name: str) -> str:
    """PEP 503 name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_requirement(text: str) -> tuple[str, str]:
    """Split 'numpy>=1.26' into ('numpy', '>=1.26'); extras and markers are not used here."""
    match = REQUIREMENT.match(text.strip())
    assert match, f"unsupported requirement syntax: {text!r}"
    return normalize(match[1]), (match[2] or "").replace(" ", "")


def parse_environment(text: str) -> dict:
    """Parse the YAML subset environment.yml uses: top-level keys with scalars or lists, and
    list items indented deeper than a `- pip:` item, which form its pip list."""
    env: dict = {}
    key, pip_indent = None, None
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line:
            continue
        indent, item = len(line) - len(line.lstrip()), line.strip()
        if indent == 0:
            key, _, value = item.partition(":")
            env[key], pip_indent = value.strip() or [], None
        elif item == "- pip:":
            env["pip"], pip_indent = [], indent
        elif item.startswith("- "):
            target = "pip" if pip_indent is not None and indent > pip_indent else key
            env[target].append(item[2:].strip())
        else:
            raise ValueError(f"unsupported YAML line: {raw!r}")
    return env


def load() -> tuple[dict, dict]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = parse_environment((ROOT / "environment.yml").read_text())
    return project, env


def test_every_extra_exists():
    project, _ = load()
    assert set(project["optional-dependencies"]) == ALL_EXTRAS


def test_python_version_matches():
    project, env = load()
    conda = dict(split_requirement(dep) for dep in env["dependencies"])
    assert conda["python"] == project["requires-python"]


def test_dependencies_agree():
    project, env = load()
    pip_reqs = project["dependencies"] + [
        dep for extra in CHECKED_EXTRAS for dep in project["optional-dependencies"][extra]
    ]
    expected = set()
    for name, spec in map(split_requirement, pip_reqs):
        expected.add((PYPI_TO_CONDA.get(name, name), spec))
    declared = {
        (name, spec)
        for name, spec in map(split_requirement, env["dependencies"])
        if name not in CONDA_ONLY
    }
    declared |= {split_requirement(dep) for dep in env.get("pip", []) if not dep.startswith("-e ")}
    assert declared == expected


def test_environment_header():
    _, env = load()
    assert env["name"] == "acrobat"
    assert env["channels"] == ["conda-forge"]
    assert "pip" in env["dependencies"], "the pip: section needs pip itself"


def test_base_has_no_gui_stack():
    project, _ = load()
    base = {split_requirement(dep)[0] for dep in project["dependencies"]}
    assert not base & GUI_PACKAGES, "GUI packages belong to the viz extra"
    viz = {split_requirement(dep)[0] for dep in project["optional-dependencies"]["viz"]}
    assert viz == GUI_PACKAGES


def test_viz_names_what_its_extra_holds():
    from acrobat.viz import VIZ_PACKAGES

    project, _ = load()
    viz = {split_requirement(dep)[0] for dep in project["optional-dependencies"]["viz"]}
    assert set(VIZ_PACKAGES) == viz


def test_make_installs_dev_and_viz():
    """`make test` and `make explorer` go through the install stamp: it installs both extras."""
    makefile = (ROOT / "Makefile").read_text()
    installs = re.findall(r"pip install -e '\.\[([a-z,]+)\]'", makefile)
    assert installs and all({"dev", "viz"} <= set(i.split(",")) for i in installs), installs


def test_console_scripts_name_the_package_mains():
    """Each console script is a ``main(argv)`` in the package (so a wheel carries it) that
    answers ``--version`` with the package's version."""
    import importlib

    import pytest

    from acrobat import __version__

    project, _ = load()
    scripts = project["scripts"]
    assert set(scripts) == {"acrobat-bench", "acrobat-fuzz", "acrobat-explorer"}
    for name, target in scripts.items():
        module, _, func = target.partition(":")
        assert module.startswith("acrobat.") and func == "main", target
        main = getattr(importlib.import_module(module), func)
        with pytest.raises(SystemExit) as stop:
            main(["--version"])
        assert stop.value.code == 0, name
    assert project["version"] == __version__
