"""The package's layering: lower layers never import higher ones.

Every import of acrobat counts, whatever its spelling: ``import acrobat.ir``, ``from acrobat.ir
import X``, ``from acrobat import ir`` (the subpackage ``ir``), relative imports, and the facade
itself (``import acrobat``, ``from acrobat import compile``), which is a layer of its own near
the top: only the benchmark, the fuzzer and the visual workbench may use it.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "acrobat"
FACADE = "facade"  # acrobat/__init__.py: `import acrobat`, `from acrobat import <name>`
ORDER = [
    "errors",
    "reprs",  # short text/HTML summaries of the big objects (REPL, notebooks); stdlib only
    "native",  # C kernels built on first use; needs only NumPy
    "registry",  # the one name -> entry registry type (ops, policies, backends, views)
    "trace",
    "ir",
    "frontend",
    "analysis",
    "passes",
    "codegen",  # needs only ir: below the compiler, which generates the host program
    "compiler",
    "backends",
    "runtime",
    "baselines",
    FACADE,
    "bench",
    "fuzz",  # the differential fuzzer drives the whole stack, as the benchmark does
    "doctor",  # `python -m acrobat doctor`: reads the native core, the compiler, the BLAS
    "__main__",  # `python -m acrobat <command>`
]
# A package may import itself, any package before it in ORDER, and nothing after it.
# `models` sits beside `frontend` (sources + data) and may use baselines lazily for oracles;
# `viz` reads only trace, ir and plain records, and drives compile and run through the facade.
ALLOWED_EXTRA = {
    "models": {"frontend", "ir", "errors", "registry", "baselines"},
    "viz": {"trace", "ir", "errors", "registry", "frontend", "models", FACADE},
}


def layers_in(root: pathlib.Path) -> set[str]:
    """The package's layers: its modules and subpackages (some are namespace packages)."""
    return {
        p.stem
        for p in root.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and p.name != "__pycache__")
    }


def layer(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """The layer a file of the package belongs to (acrobat/__init__.py is the facade)."""
    rel = path.relative_to(root).parts
    return FACADE if rel == ("__init__.py",) else rel[0].removesuffix(".py")


def imports_of(path: pathlib.Path, root: pathlib.Path = ROOT):
    """The layer of every acrobat import in ``path``, whatever its spelling."""
    layers = layers_in(root)

    def target(parts: list[str]) -> str:
        """The layer of a dotted name inside the package: its first part, or the facade."""
        return parts[0] if parts and parts[0] in layers else FACADE

    package = list(path.relative_to(root.parent).parts[:-1])  # ["acrobat", "ir", ...]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "acrobat":
                    yield target(parts[1:])
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                base = package[: len(package) - node.level + 1]
                parts = base + (node.module.split(".") if node.module else [])
            else:
                parts = (node.module or "").split(".")
            if parts[0] != "acrobat":
                continue
            if len(parts) > 1:
                yield target(parts[1:])
            else:  # from acrobat import X: a subpackage, or a name of the facade
                for a in node.names:
                    yield target([a.name])


def violations(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    me, bad = layer(path, root), []
    for dep in imports_of(path, root):
        if dep == me:
            continue
        if dep == "models":  # the model zoo: data for the top layers only
            ok = me in ("bench", "viz", FACADE)
        elif me in ALLOWED_EXTRA:
            ok = dep in ALLOWED_EXTRA[me]
        elif me in ORDER and dep in ORDER:
            ok = ORDER.index(dep) < ORDER.index(me)
        else:
            ok = dep in ("errors", "ir", "trace")
        if not ok:
            name = "acrobat (the facade)" if dep == FACADE else f"acrobat.{dep}"
            bad.append(f"{path.relative_to(root)} imports {name}")
    return bad


def test_layers():
    bad = [v for path in ROOT.rglob("*.py") for v in violations(path)]
    assert not bad, "\n".join(bad)


def test_every_spelling_is_seen(tmp_path):
    """The checker itself: each way of importing a higher layer from a low one is caught."""
    fake = tmp_path / "acrobat"
    (fake / "ir").mkdir(parents=True)
    (fake / "runtime").mkdir()  # a namespace package, as some of acrobat's are
    for name in ("__init__.py", "ir/__init__.py", "errors.py", "compiler.py"):
        (fake / name).write_text("")
    cases = {
        "import acrobat": "acrobat (the facade)",
        "import acrobat as a": "acrobat (the facade)",
        "from acrobat import compile": "acrobat (the facade)",
        "from acrobat import runtime": "acrobat.runtime",
        "import acrobat.compiler": "acrobat.compiler",
        "from acrobat.runtime.run import run": "acrobat.runtime",
        "from ..runtime import run": "acrobat.runtime",
        "from .. import compiler": "acrobat.compiler",
    }
    for code, name in cases.items():
        low = fake / "ir" / "low.py"
        low.write_text(code + "\n")
        assert violations(low, fake) == [f"ir/low.py imports {name}"], code
    low.write_text("from acrobat import errors\nfrom . import nodes\nimport numpy\n")
    assert violations(low, fake) == []


ENGINES = ROOT / "runtime" / "engines"


def test_only_the_engines_import_the_native_core():
    """The native core is reached through one seam: the engines package
    (acrobat/runtime/engines) and the native package itself; every other module gets what
    it calls from the runtime's engine (kernels their products, the executor its flush).
    ``python -m acrobat doctor`` (acrobat/doctor.py) reports on the core itself."""
    bad = []
    for path in ROOT.rglob("*.py"):
        if path.is_relative_to(ROOT / "native") or path.is_relative_to(ENGINES):
            continue
        if path == ROOT / "doctor.py":  # the diagnostics: the core's state, ISA, cache
            continue
        if "native" in set(imports_of(path)):
            bad.append(str(path.relative_to(ROOT)))
    assert not bad, "import acrobat.native outside the engines: " + ", ".join(bad)
    assert "native" in set(imports_of(ENGINES / "native.py"))
