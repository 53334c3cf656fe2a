"""``python -m acrobat doctor`` says what acrobat runs on, and the README's table lists
every ``ACROBAT_*`` variable the package reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from acrobat.doctor import ENV_VARS

ROOT = Path(__file__).resolve().parents[1]


def test_doctor_prints_engine_compiler_cache_blas_and_the_environment(tmp_path):
    env = {**os.environ, "ACROBAT_CACHE_DIR": str(tmp_path), "ACROBAT_CC_TIMEOUT": "7"}
    done = subprocess.run(
        [sys.executable, "-m", "acrobat", "doctor"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for label in ("native core:", "C compiler:", "cache:", "BLAS:", "scheduler:"):
        assert label in out
    assert f"cache:        {tmp_path} (private;" in out
    assert "ACROBAT_CC_TIMEOUT=7  (seconds one compiler call may take" in out
    assert "timeout:    7 s" in out


def test_an_unknown_command_prints_the_usage():
    done = subprocess.run(
        [sys.executable, "-m", "acrobat", "nope"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2 and "usage: python -m acrobat" in done.stderr
    assert "invalid choice: 'nope' (choose from 'doctor')" in done.stderr


def _read_in_code() -> set[str]:
    """The ACROBAT_* names the package reads from the environment (Python and C)."""
    names = set()
    read = re.compile(r"(?:environ(?:\.get)?\(|environ\[|getenv\(|ENV = )\"(ACROBAT_[A-Z0-9_]+)\"")
    for path in (ROOT / "acrobat").rglob("*"):
        if path.suffix in (".py", ".c"):
            names |= set(read.findall(path.read_text()))
    return names


def test_every_variable_read_is_documented_in_the_doctor_and_the_readme():
    assert _read_in_code() == set(ENV_VARS)
    readme = (ROOT / "README.md").read_text()
    # | `NAME` | effect | the equivalent argument |
    table = re.findall(r"^\| `(ACROBAT_[A-Z0-9_]+)` \| (.+?) \| .+ \|$", readme, re.M)
    assert dict(table) == ENV_VARS
