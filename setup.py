"""Builds acrobat's native core at install time: the fixed C sources in acrobat/native/ as
one extension module, ``acrobat.native._acrobat_native``, with this Python's own compile
and link flags (setuptools' ``build_ext``), so ``pip install .`` compiles it once and
``pip wheel .`` gives a platform wheel. Everything else is in pyproject.toml.

The module records the SHA-256 of the sources it was built from (``sources_sha``), which
``acrobat.native`` compares with the sources beside it: an editable checkout whose C files
changed since its last install builds the core at run time instead of loading a stale one.
"""

import hashlib
from pathlib import Path

import numpy
from setuptools import Extension, setup

NATIVE = Path("acrobat/native")
# the order acrobat.native.SOURCES and HEADERS give them (tests/native/test_install.py)
SOURCES = ("smallgemm.c", "rowprog.c", "plan.c", "flush.c", "sched.c", "values.c")
HEADERS = ("adt.h", "batchplan.h")

digest = hashlib.sha256(b"".join((NATIVE / f).read_bytes() for f in SOURCES + HEADERS))

setup(
    ext_modules=[
        Extension(
            "acrobat.native._acrobat_native",
            sources=[str(NATIVE / f) for f in SOURCES],
            depends=[str(NATIVE / f) for f in HEADERS],
            include_dirs=[str(NATIVE), numpy.get_include()],
            define_macros=[("ACROBAT_SOURCES_SHA", f'"{digest.hexdigest()}"')],
            extra_compile_args=["-O3", "-pthread"],
            extra_link_args=["-pthread"],
            # where it cannot be compiled (no compiler, a platform its C does not know),
            # the package installs without it: acrobat.native says so and runs without
            optional=True,
        )
    ]
)
