"""The native core compiled at install time (``setup.py``): the package's build backend
makes it a platform wheel's extension module, ``acrobat.native`` loads it (and only a
copy built from the C sources beside it), and a CPU without AVX2 loses only the GEMM.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from acrobat import native

ROOT = Path(__file__).resolve().parents[2]
installed, why_not = native._installed()


def _setup_tuple(name: str) -> tuple[str, ...]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"setup.py has no {name}")


def test_setup_builds_the_sources_the_runtime_hashes():
    assert _setup_tuple("SOURCES") == tuple(p.name for p in native.SOURCES)
    assert _setup_tuple("HEADERS") == tuple(p.name for p in native.HEADERS)


@pytest.mark.skipif(installed is None, reason=f"no installed core here: {why_not}")
def test_the_installed_core_is_the_one_loaded():
    if os.environ.get("ACROBAT_NATIVE", "1") != "0":
        assert native.load() is installed and native.status().startswith("installed")
    assert installed.sources_sha == native._sources_sha()


def test_a_core_built_from_other_sources_is_not_loaded(monkeypatch):
    monkeypatch.setattr(native, "_sources_sha", lambda: "0" * 64)
    mod, why = native._installed()
    if mod is None and why.startswith("no core"):
        pytest.skip(f"no installed core here: {why}")
    assert mod is None and "older than its C sources" in why


PROBE = """
import warnings
warnings.simplefilter("always")
import acrobat
spec = acrobat.models.load("treelstm", size="small")
xs = spec.instances(8, seed=0)
prog = acrobat.compile(spec.module, spec.params)
res = acrobat.run(prog, xs, policy="acrobat")
assert acrobat.values_equal(res.outputs, [spec.evaluate(x) for x in xs], rtol=1e-4, atol=1e-5)
print(res.stats["native"])
"""


def test_a_cpu_without_avx2_loses_only_the_gemm(tmp_path):
    env = {**os.environ, "ACROBAT_NATIVE_ISA": "portable", "ACROBAT_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    status = done.stdout.strip()
    if status.startswith("off ("):
        pytest.skip(f"no native core here: {status}")
    assert status.endswith("(portable: no AVX2/FMA GEMM)")
    assert done.stderr.count("the AVX2 GEMM is off") == 1


@pytest.mark.slow
def test_the_wheel_is_a_platform_wheel_that_runs_without_a_compiler(tmp_path):
    """``pip wheel .`` compiles the core; the wheel, installed where no C compiler is on
    PATH, runs the README's program on the installed core with one warning (the
    generated host program cannot be built)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("acrobat-*.whl")
    assert not wheel.name.endswith("-none-any.whl")
    assert any("_acrobat_native" in n for n in zipfile.ZipFile(wheel).namelist())
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    env = {
        "PATH": str(tmp_path / "empty"),
        "PYTHONPATH": str(site),
        "HOME": str(tmp_path),
        "ACROBAT_HOST_C": "1",
    }
    probe = PROBE + "print(res.stats.host_code)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    status, host = done.stdout.splitlines()
    assert status == "installed" and host.startswith("python (no C build: ")
    assert done.stderr.count("NativeFallbackWarning") == 1, done.stderr


def test_without_the_native_core_and_numba_the_python_scheduler_runs():
    """numba is an extra: with neither it nor the native core, the leveling scheduler runs
    as plain Python and the results are the interpreter's; the doctor says so."""
    code = "import sys; sys.modules['numba'] = None  # as if not installed\n" + PROBE
    code += "from acrobat import doctor; print(doctor._scheduler())\n"
    env = {**os.environ, "ACROBAT_NATIVE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    status, scheduler = done.stdout.splitlines()
    assert status == "off (ACROBAT_NATIVE=0)"
    assert scheduler == "Python (neither the native core nor numba)"
