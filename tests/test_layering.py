"""The package's layering (DESIGN.md §3): lower layers never import higher ones."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "acrobat"
ORDER = [
    "errors",
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
    "bench",
    "fuzz",  # the differential fuzzer drives the whole stack, as the benchmark does
]
# A package may import itself, any package before it in ORDER, and nothing after it.
# `models` sits beside `frontend` (sources + data) and may use baselines lazily for oracles;
# `viz` reads only trace, ir and plain records.
ALLOWED_EXTRA = {
    "models": {"frontend", "ir", "errors", "baselines"},
    "viz": {"trace", "ir", "errors", "frontend", "models"},
}


def imports_of(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("acrobat."):
            yield node.module.split(".")[1]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("acrobat."):
                    yield a.name.split(".")[1]


def layer(path):
    rel = path.relative_to(ROOT).parts
    return rel[0].removesuffix(".py")


def test_layers():
    bad = []
    for path in ROOT.rglob("*.py"):
        me = layer(path)
        if me == "__init__":
            continue
        for dep in imports_of(path):
            if dep == me:
                continue
            if dep == "models":  # the model zoo: data for the top layers only
                ok = me in ("bench", "viz")
            elif me in ALLOWED_EXTRA:
                ok = dep in ALLOWED_EXTRA[me]
            elif me in ORDER and dep in ORDER:
                ok = ORDER.index(dep) < ORDER.index(me)
            else:
                ok = dep in ("errors", "ir", "trace")
            if not ok:
                bad.append(f"{path.relative_to(ROOT)} imports acrobat.{dep}")
    assert not bad, "\n".join(bad)
