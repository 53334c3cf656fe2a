"""Results files: JSON Lines whose first row describes the machine and the code, and whose
other rows are written one by one as each configuration finishes.

A grid stopped half-way (Ctrl-C, a kill, a crash) keeps a valid file with the rows done: each
row is one ``write`` of a whole line, flushed at once. The header row is
``{"metadata": {...}}`` (:func:`machine_metadata`: commit, date, CPU model and flags, cores,
Python, NumPy and BLAS versions, load); readers (:func:`read_results`) take it apart from the
rows, accept files without one (``acrobat-bench run > row.jsonl``), and skip a last line cut
short (a kill in the middle of a write).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from acrobat.runtime import threads as blas_threads

HEADER = "metadata"


def _git(*args: str) -> str:
    """A git command's output in the package's checkout ("" when it is not one)."""
    here = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            ["git", "-C", str(here), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _cpu() -> tuple[str, str]:
    """The CPU's model name and feature flags (Linux's /proc/cpuinfo; else what
    :mod:`platform` knows and no flags)."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    model = value.strip()
                elif key.strip() in ("flags", "Features") and not flags:
                    flags = value.strip()
    except OSError:
        pass
    return model, flags


def machine_metadata(**extra: Any) -> dict[str, Any]:
    """What a result depends on besides the configuration: the code (commit, and whether
    the checkout had changes), the date (UTC), the CPU, the cores, the library versions and
    the load when the run started; ``extra`` (the command) is added as given."""
    from acrobat import __version__

    model, flags = _cpu()
    commit = _git("rev-parse", "HEAD")
    return {
        "acrobat": __version__,
        "commit": commit,
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")) if commit else None,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu": model,
        "cpu_flags": flags,
        "cores": os.cpu_count(),
        "usable_cores": blas_threads.cpus(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas_threads.blas().name,
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        **extra,
    }


class ResultsWriter:
    """Writes a results file row by row: the header at once, then :meth:`append` per row."""

    def __init__(self, path: Path, metadata: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.rows = 0
        self._file = path.open("w", encoding="utf-8")
        self._write({HEADER: metadata})

    def _write(self, obj: dict[str, Any]) -> None:
        self._file.write(json.dumps(obj) + "\n")
        self._file.flush()

    def append(self, row: dict[str, Any]) -> None:
        """Add one row, on disk before this returns."""
        self._write(row)
        self.rows += 1

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_results(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the header's metadata, ``{}`` without one; the rows) of a results file."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    meta: dict[str, Any] = {}
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines) and not text.endswith("\n"):  # cut short by a kill
                print(f"{path}:{n}: skipped an unfinished last row", file=sys.stderr)
                continue
            raise ValueError(f"{path}:{n}: not a JSON row") from None
        if HEADER in obj and len(obj) == 1:
            meta = obj[HEADER]
        else:
            rows.append(obj)
    return meta, rows
