"""``flush.c`` checks what it is handed before it reads: records of the wrong width for
a twin group, the wrong type or a kernel out of range raise a typed Python error, never a
read out of bounds (``make test-asan`` runs these under AddressSanitizer)."""

from __future__ import annotations

import numpy as np
import pytest

from acrobat import native

mod = native.load()
pytestmark = pytest.mark.skipif(mod is None, reason=f"the native module is off: {native.status()}")


def _run_flush(records, specs, batches):
    row_of, arena_of = np.zeros(4, np.int64), np.zeros(4, np.int16)
    return mod.run_flush(
        batches, records, specs, row_of, arena_of, 0, native.new_int64s, [None], None
    )


def _never(*args, **kw):
    raise AssertionError("no kernel may run on records the flush refused")


def test_a_twin_group_with_records_of_width_zero_is_a_value_error():
    # the member is the records' last column: width 0 has none (flush.c read row[-1])
    records = [np.zeros((1, 0), np.int64)]
    with pytest.raises(ValueError, match="member column"):
        _run_flush(records, [(_never, (), (), 2)], [(0, np.array([0], np.int64))])


def test_a_member_out_of_range_is_an_index_error():
    records = [np.array([[5]], np.int64)]
    with pytest.raises(IndexError, match="member out of range"):
        _run_flush(records, [(_never, (), (), 2)], [(0, np.array([0], np.int64))])


@pytest.mark.parametrize(
    "records,specs,batches,error",
    [
        ([np.zeros((1, 1), np.int64)], [(_never, (), ())], [], TypeError),  # spec of 3
        ([np.zeros((1, 1), np.int32)], [(_never, (), (), 0)], [(0, np.array([0]))], ValueError),
        ([np.zeros((1, 1), np.int64)], [(_never, (), (), 0)], [(3, np.array([0]))], IndexError),
        ([np.zeros((1, 1), np.int64)], [(_never, (), (), 0)], [(0, np.array([7]))], IndexError),
        ([], [(_never, (), (), 0)], [], ValueError),  # one records table per spec
    ],
)
def test_malformed_flushes_raise_typed_errors(records, specs, batches, error):
    with pytest.raises(error):
        _run_flush(records, specs, batches)
