"""``python -m acrobat doctor``: what acrobat runs on here, and what is off and why.

One screen a user can paste into a bug report: the engine runs would use, the native core (installed, built at run
time or off, and why), the instruction set its products use, the C compiler that builds
the generated host programs, the cache those go to and its state, the BLAS and its
threads, the scheduler, and every ``ACROBAT_*`` environment variable in force. Reading
it loads the native core as a run would (one warning per thing that is off, as a run
gives) and builds nothing.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import warnings

import numpy as np

from acrobat import native
from acrobat.errors import AcrobatError, NativeBuildError
from acrobat.native import cache
from acrobat.runtime import engines

ENV_VARS = {
    "ACROBAT_ENGINE": "native or reference: the engine runs use (default: native where it loads)",
    "ACROBAT_NATIVE": "0: no native code at all (NumPy and Python alone)",
    "ACROBAT_NATIVE_INSTALLED": "0: build the core at run time, not the installed one",
    "ACROBAT_NATIVE_ISA": "avx2: no AVX-512 tiles; portable: no AVX2 GEMM either",
    "ACROBAT_HOST_C": "1: compile the host program at once; 0: never; auto (default)",
    "ACROBAT_CACHE_DIR": "where run-time builds are kept (default ~/.cache/acrobat)",
    "ACROBAT_CC_TIMEOUT": "seconds one compiler call may take (default 120)",
    "ACROBAT_SANITIZE": "1: run-time builds with AddressSanitizer + UBSan (make test-asan)",
    "ACROBAT_THREADS": "BLAS threads per launch: auto (default) or a count",
    "ACROBAT_DYNET_PYTHON": "the DyNet virtualenv's Python for the peer benchmark",
}
"""The environment variables acrobat reads, and what each does (README's table)."""


def _core() -> list[str]:
    mod = native.load()
    lines = [f"native core:  {native.status()} ({native.load_ms():.0f} ms)"]
    if mod is not None:
        lines.append(f"  module:     {mod.__file__}")
        isa = mod.isa() if mod.available() else "portable (no AVX2/FMA: products on NumPy)"
        lines.append(f"  ISA:        {isa}")
    return lines


def _compiler() -> list[str]:
    try:
        ident = cache.compiler_id().splitlines()
        first = ident[1] if len(ident) > 1 else ident[0]
        line = f"{ident[0]} ({first.strip()})"
    except NativeBuildError as err:
        line = f"none ({err.message}): host programs run in Python"
    flags = " with AddressSanitizer + UBSan" if cache.sanitizing() else ""
    return [f"C compiler:   {line}{flags}", f"  timeout:    {cache.cc_timeout():g} s"]


def _blas() -> list[str]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["BLAS:         unknown (threadpoolctl missing)"]
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return ["BLAS:         none found by threadpoolctl"]
    return [
        f"BLAS:         {p.get('internal_api')} {p.get('version')} "
        f"({p.get('architecture', '?')}), {p.get('num_threads')} threads"
        for p in pools
    ]


def _engine() -> list[str]:
    try:
        engine = engines.choose()
    except AcrobatError as err:
        return [f"engine:       none ({err})"]
    return [f"engine:       {engine.describe()}"]


def _scheduler() -> str:
    if getattr(native.load(), "list_schedule", None) is not None:
        return "native (sched.c)"
    if importlib.util.find_spec("numba") is not None:
        return "numba (the native core is off)"
    return "Python (neither the native core nor numba)"


def report() -> str:
    """The doctor's report, as text."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lines = [
            f"acrobat on Python {platform.python_version()}, NumPy {np.__version__}, "
            f"{platform.system()} {platform.machine()}, {cpus} CPUs",
            *_engine(),
            *_core(),
            *_compiler(),
            f"cache:        {cache.cache_state()}",
            *_blas(),
            f"scheduler:    {_scheduler()}",
        ]
    lines += [f"warning:      {w.message}" for w in caught]
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("ACROBAT_"))
    lines.append("environment:  " + ("" if env else "no ACROBAT_* variable set"))
    lines += [f"  {k}={v}" + (f"  ({ENV_VARS[k]})" if k in ENV_VARS else "") for k, v in env]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Prints :func:`report`; ``python -m acrobat doctor``."""
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
