"""The compiler installs and runs without the `viz` extra (panel, bokeh, ipywidgets, ...).

Each check runs in a fresh interpreter whose imports of the extra's packages fail, as they do in
an environment where `pip install acrobat` (no extras) put nothing of the GUI stack.
"""

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The `viz` extra's packages, by their import names (here the same as their PyPI names).
VIZ = sorted(
    re.match(r"[A-Za-z0-9_-]+", dep)[0]
    for dep in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["viz"]
)
PRELUDE = textwrap.dedent(
    f"""
    import importlib.abc, sys

    BLOCKED = {set(VIZ)!r}

    class _NoViz(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, _NoViz())
    """
)


def run_without_viz(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_compile_and_run_without_viz():
    proc = run_without_viz(
        """
        import acrobat
        import acrobat.bench, acrobat.bench.harness, acrobat.fuzz, acrobat.baselines
        spec = acrobat.models.load("treelstm", "tiny")
        prog = acrobat.compile(spec.module, spec.params)
        xs = spec.instances(4, seed=1)
        res = acrobat.run(prog, xs)
        for x, y in zip(xs, res.outputs):
            assert acrobat.values_equal(y, spec.evaluate(x), rtol=1e-5, atol=1e-6)
        gui = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
        assert not gui, gui
        print("ran", len(res.outputs), "instances")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "ran 4 instances" in proc.stdout


def test_viz_says_what_to_install():
    proc = run_without_viz(
        """
        try:
            import acrobat.viz
        except ImportError as e:
            from acrobat.errors import AcrobatError
            assert isinstance(e, AcrobatError), type(e)
            print(e)
        else:
            raise SystemExit("acrobat.viz imported without its packages")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'acrobat[viz]'" in proc.stdout
    assert "panel" in proc.stdout and "bokeh" in proc.stdout


def test_bench_report_without_bokeh_writes_csv_and_markdown(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"model": "treelstm", "size": "tiny", "batch": 2, "system": "acrobat", '
        '"policy": "acrobat", "total_ms": 1.0, "gen_ms": 0.1, "sched_ms": 0.1, '
        '"exe_ms": 0.8, "launches": 3, "lower_bound": 3}\n'
    )
    proc = run_without_viz(
        f"""
        from acrobat.bench.__main__ import main
        raise SystemExit(main(["report", {str(rows)!r}, "--out", {str(tmp_path / "r")!r}]))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'acrobat[viz]'" in proc.stderr
    assert (tmp_path / "r.csv").exists() and (tmp_path / "r.md").exists()
    assert not (tmp_path / "r.html").exists()
