"""Shared helpers of the pass tests: run one pass, compare with a golden IR text, check values.

Goldens live in ``tests/passes/golden/<pass>/<case>.ir``. A mismatch fails with a diff;
``ACROBAT_UPDATE_GOLDEN=1 pytest tests/passes`` rewrites them instead (then read the diff
before committing: a golden is only as good as its review).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acrobat.ir.evaluate import evaluate
from acrobat.ir.nodes import Function, KernelCall, Module, ParamRef
from acrobat.ir.parser import parse_module
from acrobat.ir.traversal import walk
from acrobat.ir.values import values_equal
from acrobat.ir.verify import verify
from acrobat.passes.base import PassContext
from acrobat.passes.options import CompileOptions

GOLDEN = Path(__file__).parent / "golden"
UPDATE_ENV = "ACROBAT_UPDATE_GOLDEN"


def check_golden(pass_dir: str, case: str, m: Module) -> None:
    """``m.pretty()`` equals ``golden/<pass_dir>/<case>.ir`` (or rewrites it on request)."""
    path = GOLDEN / pass_dir / f"{case}.ir"
    text = m.pretty()
    if os.environ.get(UPDATE_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no golden {path}; create it with {UPDATE_ENV}=1 and review it")
    expected = path.read_text()
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), text.splitlines(True), str(path), "actual"
            )
        )
        pytest.fail(f"IR differs from {path} (rerun with {UPDATE_ENV}=1 to accept):\n{diff}")


def run(passes: list, m: Module, params: dict[str, np.ndarray], options=None):
    """Apply ``passes`` in order with one context; returns (module, context)."""
    ctx = PassContext(options or CompileOptions(), dict(params))
    for p in passes:
        m = p.apply(m, ctx)
    return m, ctx


def assert_roundtrip(m: Module) -> None:
    """The printed module parses back to an equal module."""
    assert parse_module(m.pretty()) == m


def assert_same_values(
    before: Module,
    after: Module,
    params_before: dict[str, np.ndarray],
    params_after: dict[str, np.ndarray],
    instances: list[Any],
) -> None:
    """Both modules give the same result on every instance (float tolerance 1e-5)."""
    assert instances
    for x in instances:
        a = evaluate(before, x, params_before)
        b = evaluate(after, x, params_after)
        assert values_equal(a, b, rtol=1e-5, atol=1e-6), (x, a, b)


def check_pass(
    p,
    before: Module,
    params: dict[str, np.ndarray],
    instances: list[Any],
    case: str | None = None,
    options: CompileOptions | None = None,
    anf: bool = True,
):
    """Run one pass; check its golden (if ``case``), the verifier, round trip and values."""
    after, ctx = run([p], before, params, options)
    if case is not None:
        check_golden(p.name, case, after)
    verify(after, anf=anf)
    assert_roundtrip(after)
    assert_same_values(before, after, params, ctx.params, instances)
    return after, ctx


def weights_read(f: Function) -> set[str]:
    """The weights a function's body reads directly."""
    return {e.name for e in walk(f.body) if isinstance(e, ParamRef)}


def kernel_calls(m: Module, fn: str) -> list[KernelCall]:
    """Every kernel call in function ``fn``, in pre-order."""
    return [e for e in walk(m.function_map[fn].body) if isinstance(e, KernelCall)]


def vec(rng: np.random.Generator, n: int) -> np.ndarray:
    """A float32 vector of length ``n``."""
    return rng.standard_normal(n).astype(np.float32)
