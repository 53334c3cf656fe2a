"""acrobat.native's fused elementwise kernel (``rowprog.c``) and the kernels that call it.

Every op must equal NumPy's (IEEE ops bit for bit, exp/tanh/sigmoid to a few ulps, special
values exactly), a program must run whatever its operands' row strides and whether an
output is an input's memory, every layout or program it does not take must be declined
(False, nothing written), and generated kernels must give the same results with the
fusion on, off, or declined at run time.
"""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.codegen.numpy_kernels import ROWPROG_OPS, _sigmoid
from acrobat.ir.ops import REGISTRY
from acrobat.runtime.run import prepare
from tests.runtime.helpers import ATOL, RTOL, batch

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"native kernel unavailable here: {native.status()}"
)

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 88.75, -88.75], np.float32)
# each op's reference semantics, as the interpreter computes it (the op registry's impl)
NUMPY = {name: REGISTRY[name].impl for name in ROWPROG_OPS}
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}
EXACT = {"relu", "sqrt", "neg"} | BINARY  # IEEE operations: the same bits as NumPy


def program(n, nin, instrs, outs, nconst=0):
    """The int32 code of a program: ``instrs`` as (op name, dst, a, b) operand numbers."""
    ntemp = max(d for _, d, _, _ in instrs) - nin - nconst + 1
    words = [n, nin, nconst, ntemp, len(instrs)]
    for op, d, a, b in instrs:
        words += [ROWPROG_OPS[op][0], d, a, b]
    return np.array(words + [len(outs)] + list(outs), np.int32)


def ulps(a, b):
    """Distance in units in the last place between float32 arrays of one sign."""
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64))


def run_op(name, x, y=None):
    m, n = x.shape
    ins = (x,) if y is None else (x, y)
    nin = len(ins)
    code = program(n, nin, [(name, nin, 0, 1 if y is not None else 0)], [nin])
    out = np.full((m, n), 7.0, np.float32)
    ok = native.load().rowprog(m, code, np.zeros(0, np.float32), (*ins, out))
    assert ok is True
    return out


@needs_native
@pytest.mark.parametrize("name", sorted(NUMPY))
@pytest.mark.parametrize("n", [1, 7, 8, 13, 256])
def test_every_op_equals_numpy(name, n):
    rng = np.random.default_rng(n)
    rows = []
    for scale in (0.05, 0.5, 3.0, 30.0, 100.0):
        rows.append((rng.standard_normal(n) * scale).astype(np.float32))
    rows.append(np.resize(SPECIAL, n))
    x = np.stack(rows)
    y = np.stack([np.roll(r, 1) for r in rows[::-1]]) if name in BINARY else None
    with np.errstate(all="ignore"):
        want = NUMPY[name](x, y) if y is not None else NUMPY[name](x.copy())
        want = np.asarray(want, np.float32)
        got = run_op(name, x, y)
    assert (np.isnan(got) == np.isnan(want)).all()
    finite = np.isfinite(want)
    assert (got[~finite & ~np.isnan(want)] == want[~finite & ~np.isnan(want)]).all()
    if name in EXACT:
        assert (got[finite] == want[finite]).all()
        return
    normal = finite & (np.abs(want) >= np.finfo(np.float32).tiny)
    assert ulps(got[normal], want[normal]).max() <= 4
    # results below the normal range: as NumPy's to within the smallest normal
    assert np.abs(got[finite & ~normal] - want[finite & ~normal]).max(initial=0) <= 1.2e-38


@needs_native
def test_a_chain_with_constants_biases_strided_views_and_in_place_outputs():
    """(x * 2 + b) -> tanh, and sigmoid(x) * y: x a column slice (row stride 3n), b one
    vector for every row, one output written over its input's memory."""
    rng = np.random.default_rng(0)
    m, n = 11, 20
    whole = rng.standard_normal((m, 3 * n)).astype(np.float32)
    x = whole[:, n : 2 * n]
    y = rng.standard_normal((m, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    want_t = np.tanh(x * np.float32(2.0) + b)
    want_s = _sigmoid(x.copy()) * y
    out = np.empty((m, n), np.float32)
    # operands: 0 x, 1 b, 2 y; const 3 (= 2.0); temps 4..8; outputs: y's own memory, out
    code = program(
        n,
        3,
        [
            ("mul", 4, 0, 3),
            ("add", 5, 4, 1),
            ("tanh", 6, 5, 5),
            ("sigmoid", 7, 0, 0),
            ("mul", 8, 7, 2),
        ],
        [6, 8],
        nconst=1,
    )
    consts = np.array([2.0], np.float32)
    assert native.load().rowprog(m, code, consts, (x, b, y, out, y)) is True
    np.testing.assert_allclose(out, want_t, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(y, want_s, rtol=1e-6, atol=1e-7)


@needs_native
def test_zero_rows_write_nothing_and_succeed():
    code = program(4, 1, [("tanh", 1, 0, 0)], [1])
    x = np.zeros((0, 4), np.float32)
    assert native.load().rowprog(0, code, np.zeros(0, np.float32), (x, x.copy())) is True


def _declined(code, arrays, consts=None, m=3):
    outs = [a for a in arrays if isinstance(a, np.ndarray) and a.flags.writeable]
    before = [a.copy() for a in outs]
    c = np.zeros(0, np.float32) if consts is None else consts
    assert native.load().rowprog(m, code, c, tuple(arrays)) is False
    for a, b in zip(outs, before):
        np.testing.assert_array_equal(a, b)


@needs_native
def test_layouts_it_does_not_take_are_declined_untouched():
    code = program(4, 1, [("tanh", 1, 0, 0)], [1])
    ok_in = np.ones((3, 4), np.float32)
    out = np.full((3, 4), 5.0, np.float32)
    _declined(code, [ok_in.astype(np.float64), out])  # not float32
    _declined(code, [np.ones((3, 5), np.float32), out])  # wrong width
    _declined(code, [np.ones((2, 4), np.float32), out])  # wrong rows
    _declined(code, [np.ones((3, 8), np.float32)[:, ::2], out])  # elements not adjacent
    _declined(code, [np.ones((3, 4, 1), np.float32), out])  # rank 3
    _declined(code, [ok_in, np.ones(4, np.float32)])  # a 1-d output
    _declined(code, [ok_in, out, out])  # one array too many
    _declined(code, [ok_in, "not an array"])


@needs_native
@pytest.mark.parametrize(
    "words",
    [
        [4, 1, 0, 1, 1, 99, 1, 0, 0, 1, 1],  # unknown op
        [4, 1, 0, 1, 1, 9, 0, 0, 0, 1, 1],  # writes an input
        [4, 1, 0, 1, 1, 1, 1, 0, 7, 1, 1],  # reads past the operands
        [4, 1, 0, 1, 1, 9, 1, 0, 0, 1, 0],  # outputs an input
        [4, 1, 0, 1, 2, 9, 1, 0, 0],  # truncated
        [0, 1, 0, 1, 1, 9, 1, 0, 0, 1, 1],  # no width
        [4, 1, 2, 1, 1, 9, 3, 0, 0, 1, 3],  # two constants, none given
    ],
)
def test_malformed_programs_are_declined(words):
    out = np.full((3, 4), 5.0, np.float32)
    _declined(np.array(words, np.int32), [np.ones((3, 4), np.float32), out])


def _kernel_sources(prog):
    return prepare(prog, "numpy").sources


@needs_native
def test_treelstm_cell_runs_its_gates_as_one_call():
    spec = acrobat.models.load("treelstm", "tiny")
    on = _kernel_sources(acrobat.compile(spec.module, spec.params))
    assert on["cell_node1"].count("_rowprog(") == 1
    assert "_sigmoid(" in on["cell_node1"]  # kept as the fallback
    off = acrobat.compile(
        spec.module, spec.params, acrobat.CompileOptions().without("fused_elementwise")
    )
    assert not any("_rowprog" in src for src in _kernel_sources(off).values())


@needs_native
@pytest.mark.parametrize(
    "model", ["treelstm", "treelstm_childsum", "birnn", "nestedrnn", "drnn", "stackrnn"]
)
def test_fused_declined_and_off_give_the_reference_results(model, monkeypatch):
    spec = acrobat.models.load(model, "tiny")
    xs, _ = batch(model, 6, 1)
    want = [spec.evaluate(x) for x in xs]
    on = acrobat.compile(spec.module, spec.params)
    assert any("_rowprog(" in src for src in _kernel_sources(on).values())
    off = acrobat.compile(
        spec.module, spec.params, acrobat.CompileOptions().without("fused_elementwise")
    )
    results = [acrobat.run(p, xs, strategy="batched").outputs for p in (on, off)]
    # the native call declining every layout: the kernels' NumPy fallback runs
    real = native.load()

    class Declining:
        rowprog = staticmethod(lambda *args: False)

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setattr(native, "_module", Declining())
    declined = acrobat.compile(spec.module, spec.params)
    assert any("_rowprog(" in src for src in _kernel_sources(declined).values())
    results.append(acrobat.run(declined, xs, strategy="batched").outputs)
    for outs in results:
        for got, w in zip(outs, want):
            assert acrobat.values_equal(got, w, rtol=RTOL, atol=ATOL)


@needs_native
def test_inputs_read_in_place_from_their_arena_rows():
    # an input as (arena buffer, rows): the rows are read where they lie, no gather first
    rng = np.random.default_rng(3)
    arena = rng.standard_normal((40, 13)).astype(np.float32)
    rows = rng.integers(0, 30, 9)  # scattered, repeats allowed; rows 30.. hold the output
    y = rng.standard_normal((9, 13)).astype(np.float32)
    code = program(13, 2, [("add", 2, 0, 1), ("tanh", 3, 2, 2)], [3])
    mod = native.load()
    want = np.empty((9, 13), np.float32)
    assert mod.rowprog(9, code, np.zeros(0, np.float32), (arena[rows], y, want)) is True
    out = arena[30:39]  # the output in the same arena, other rows: the usual case
    assert mod.rowprog(9, code, np.zeros(0, np.float32), ((arena, rows), y, out)) is True
    np.testing.assert_array_equal(out, want)
    # both inputs from the arena, one of them a block
    want2 = np.empty((9, 13), np.float32)
    block = np.arange(2, 11)
    assert mod.rowprog(9, code, np.zeros(0, np.float32), (arena[rows], arena[block], want2))
    got2 = np.full((9, 13), np.nan, np.float32)
    assert mod.rowprog(9, code, np.zeros(0, np.float32), ((arena, rows), (arena, block), got2))
    np.testing.assert_array_equal(got2, want2)


@needs_native
def test_input_rows_it_cannot_take_are_declined_untouched():
    code = program(4, 1, [("tanh", 1, 0, 0)], [1])
    arena = np.ones((6, 4), np.float32)
    out = np.full((3, 4), 5.0, np.float32)
    ok = np.array([0, 5, 2])
    _declined(code, [(arena, np.array([0, 6, 2])), out])  # a row past the arena
    _declined(code, [(arena, np.array([0, -1, 2])), out])  # a negative row
    _declined(code, [(arena, ok.astype(np.int32)), out])  # not int64
    _declined(code, [(arena, ok[:2]), out])  # not one row per output row
    _declined(code, [(arena, ok.reshape(3, 1)), out])  # not a vector
    _declined(code, [(arena.astype(np.float64), ok), out])  # not float32
    _declined(code, [(np.ones((6, 5), np.float32), ok), out])  # wrong width
    _declined(code, [(arena, ok, ok), out])  # not a pair
    _declined(code, [np.ones((3, 4), np.float32), (arena, ok)])  # an output as a pair
    # an input row that an output writes (it would be read after it was written)
    shared = np.arange(24, dtype=np.float32).reshape(6, 4)
    before = shared.copy()
    assert (
        native.load().rowprog(3, code, np.zeros(0, np.float32), ((shared, ok), shared[3:6]))
        is False
    )
    np.testing.assert_array_equal(shared, before)
