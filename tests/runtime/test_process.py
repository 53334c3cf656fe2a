"""A run borrows process-wide settings and gives them back; runtimes are safe from threads.

Two threads calling ``acrobat.run`` on one compiled program shared one ``Runtime`` (its
record lists, arenas, host-program state) with no lock: TreeLSTM gave 255 of 320 outputs
off the reference, StackRNN and DRNN raised. Runs now take turns
(:func:`acrobat.runtime.process.borrowed`); every output of four threads equals the
reference, and the recursion limit and the cycle collector are as the caller left them.
"""

from __future__ import annotations

import gc
import sys
import threading

import pytest

import acrobat
from acrobat.runtime.process import HOST_RECURSION_LIMIT, borrowed
from tests.runtime.helpers import assert_outputs_equal, batch, program


@pytest.mark.parametrize("name", ["treelstm", "stackrnn", "drnn"])
@pytest.mark.parametrize("strategy", ["batched", "auto"])
def test_four_threads_on_one_program_give_the_reference(name, strategy):
    prog = program(name)
    work = [batch(name, 16, seed) for seed in range(4)]
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            xs, _ = work[t]
            for trace_level in ("off", "batches", "off"):
                res = acrobat.run(prog, xs, strategy=strategy, trace_level=trace_level)
                results.setdefault(t, []).append(res.outputs)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for t in range(4):
        _, refs = work[t]
        assert len(results[t]) == 3
        for outputs in results[t]:
            assert_outputs_equal(outputs, refs, f"{name} thread {t}")


def test_a_run_leaves_the_recursion_limit_and_the_collector_as_found():
    prog = program("treelstm")
    xs, _ = batch("treelstm", 4, 0)
    limit = sys.getrecursionlimit()
    for collecting in (True, False):
        (gc.enable if collecting else gc.disable)()
        try:
            acrobat.run(prog, xs, trace_level="off")
            assert gc.isenabled() is collecting
            assert sys.getrecursionlimit() == limit
        finally:
            gc.enable()


def test_a_failed_run_restores_them_too():
    prog = program("treelstm")
    limit = sys.getrecursionlimit()
    with pytest.raises(acrobat.AcrobatError):
        acrobat.run(prog, ["not a tree"], trace_level="off")
    assert gc.isenabled() and sys.getrecursionlimit() == limit


def test_borrowed_is_reentrant_and_restores_at_the_outermost_exit():
    limit = sys.getrecursionlimit()
    with borrowed():
        assert sys.getrecursionlimit() == max(limit, HOST_RECURSION_LIMIT)
        assert not gc.isenabled()
        with borrowed():
            pass
        assert not gc.isenabled()  # the inner exit leaves the outer run's settings
    assert gc.isenabled() and sys.getrecursionlimit() == limit
