"""The record format of acrobat.codegen.records, as the host program writes it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import acrobat
from acrobat.codegen.records import ARGS, INST, KEY, OUT, STRIDE, float_bits
from tests.runtime.helpers import batch, captured_schedules, program


@pytest.mark.parametrize("x", [0.0, -0.0, 1.5, -2.25, 1e300, math.inf, 3])
def test_float_bits_round_trip_through_int64(x):
    bits = np.array([float_bits(x)], np.int64)
    assert bits.view(np.float64)[0] == float(x)
    assert math.copysign(1, bits.view(np.float64)[0]) == math.copysign(1, float(x))


def test_recorded_rows_follow_the_layout():
    n = 4
    xs, _ = batch("treelstm", n, 1)
    prog = program("treelstm")
    with captured_schedules() as seen:
        acrobat.run(prog, xs, trace_level="off", strategy="batched")
    (dfg, _), *_ = seen
    outs = []
    for info, rows in zip(dfg.kernels, dfg.records):
        assert rows.shape[1] == ARGS + len(info.arg_batched)
        if len(rows):
            assert (rows[:, KEY] // STRIDE == 0).all()  # one phase
            assert set(rows[:, INST].tolist()) <= set(range(n))
            outs += [o + j for o in rows[:, OUT].tolist() for j in range(info.n_outputs)]
    assert len(outs) == len(set(outs))  # every output value id made once
