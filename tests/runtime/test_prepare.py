"""The line between compile and run: a program is prepared once per backend (kernels
compiled, arenas kept) in a runtime-side cache that never keeps the program alive."""

from __future__ import annotations

import gc
import weakref

import acrobat
import acrobat.runtime.run as run_module
from tests.runtime.helpers import assert_outputs_equal, batch, spec


def fresh_program():
    s = spec("treelstm")
    return acrobat.compile(s.module, s.params)


def test_runs_reuse_one_prepared_runtime_per_backend():
    prog = fresh_program()
    rt = run_module.prepare(prog, "numpy")
    assert run_module.prepare(prog, "numpy") is rt
    assert run_module.prepare(prog, "null") is not rt
    xs, refs = batch("treelstm", 3, 0)
    assert_outputs_equal(acrobat.run(prog, xs).outputs, refs)
    assert run_module.prepare(prog, "numpy") is rt  # acrobat.run used the same one
    assert_outputs_equal(rt.run(xs, "acrobat", "off", None).outputs, refs)  # callers may hold it


def test_the_cache_lets_a_dropped_program_go():
    prog = fresh_program()
    acrobat.run(prog, batch("treelstm", 2, 0)[0], trace_level="off")
    gone = weakref.ref(prog)
    n = len(run_module._PREPARED)
    del prog
    gc.collect()
    assert gone() is None
    assert len(run_module._PREPARED) == n - 1
