"""The native code under AddressSanitizer and UBSan (``make test-asan``; CI's slow suite).

``ACROBAT_SANITIZE=1`` builds the native core and every generated host module with
``-fsanitize=address,undefined`` into the disk cache (the flags are part of their keys, so a
plain process never loads them); the interpreter runs with the compiler's ASan runtime
preloaded; UBSan stops at its first report. The runs cover the native tests, the compiled
host programs' fiber tests (their stack switches are annotated for ASan), leaving out those
that only time threads or rebuild the cache from scratch, and a short fuzz campaign.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELECTION = [
    "tests/native",
    "tests/runtime/test_host_c.py",
    "-k",
    "not test_take_back and not test_built_once and (not test_host_c or fiber)",
    "-m",
    "not slow",
    "--ignore=tests/native/test_cache.py",
    "--ignore=tests/native/test_install.py",
    "--ignore=tests/native/test_sanitize.py",
]
"""What runs under the sanitizers."""


def _asan_runtime() -> str | None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    found = subprocess.run(
        [*cc.split(), "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


def _sanitized(logs: Path) -> dict:
    """The environment of a sanitized run whose reports go to files ``logs.*`` (pytest's
    capture would lose what a process aborting on a report prints)."""
    runtime = _asan_runtime()
    assert runtime, "the C compiler has no AddressSanitizer runtime (libasan)"
    return {
        **os.environ,
        "ACROBAT_SANITIZE": "1",
        "LD_PRELOAD": runtime,
        # CPython keeps its interned objects to the end: no leak report
        "ASAN_OPTIONS": f"detect_leaks=0:log_path={logs}",
        "UBSAN_OPTIONS": f"halt_on_error=1:print_stacktrace=1:log_path={logs}",
    }


def _check(done: subprocess.CompletedProcess, logs: Path) -> None:
    # (a warning alone, as ASan's on swapcontext for the ucontext fibers, is no finding)
    reports = "".join(p.read_text() for p in logs.parent.glob(logs.name + "*"))
    assert "ERROR:" not in reports and "runtime error:" not in reports, reports[:6000]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]


@pytest.mark.slow
def test_the_native_code_is_clean_under_asan_and_ubsan(tmp_path):
    logs = tmp_path / "sanitizer"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SELECTION],
        cwd=ROOT,
        env=_sanitized(logs),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    _check(done, logs)
    assert " passed" in done.stdout


@pytest.mark.slow
def test_a_fuzz_campaign_is_clean_under_asan_and_ubsan(tmp_path):
    """Generated programs (fibers, ADTs, host arithmetic) run batched, their host programs
    compiled with the sanitizers too, against the interpreter."""
    logs = tmp_path / "sanitizer"
    done = subprocess.run(
        [sys.executable, "-m", "acrobat.fuzz", "--programs", "4", "--seed", "46", "--quiet"]
        + ["--out", str(tmp_path / "failures")],
        cwd=ROOT,
        env={**_sanitized(logs), "ACROBAT_HOST_C": "1"},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    _check(done, logs)
    assert "0 failures" in done.stdout + done.stderr
