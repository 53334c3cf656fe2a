"""Uploading a run's input tensors together (``Executor.upload_many``): the same arena rows,
value table and bytes as uploading them one by one, and the same run results."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.runtime.run import prepare
from tests.runtime.helpers import batch, program


def _fresh_executor():
    """An executor of its own (a program compiled anew gets a runtime of its own)."""
    spec = acrobat.models.load("drnn", "tiny")
    return prepare(acrobat.compile(spec.module, spec.params), "numpy").executor


def _values(rng):
    a = rng.standard_normal((5, 6)).astype(np.float32)
    return [
        rng.standard_normal(4).astype(np.float32),
        rng.standard_normal((3, 4)).astype(np.float32),
        np.float32(2.5) * np.ones((), np.float32),  # 0-d
        rng.standard_normal(4).astype(np.float64),  # another dtype: another arena
        a[:, ::2],  # not contiguous
        np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32)),
        rng.standard_normal(4).astype(np.float32),
        rng.standard_normal((3, 4)).astype(np.float32),
    ]


@pytest.mark.parametrize("first", [0, 7])
def test_upload_many_equals_uploads_one_by_one(first):
    values = _values(np.random.default_rng(first))
    vids = list(range(first, first + len(values)))
    one, many = _fresh_executor(), _fresh_executor()
    for ex in (one, many):  # earlier rows in the arenas, as a weight upload leaves
        ex.upload(0 if first else 100, values[0])
    for vid, v in zip(vids, values):
        one.upload(vid, v)
    many.upload_many(vids, values)
    ids = np.array(vids)
    assert np.array_equal(one.row_of[ids], many.row_of[ids])
    assert np.array_equal(one.arena_of[ids], many.arena_of[ids])
    for vid, v in zip(vids, values):
        got = many.read(vid)
        assert got.dtype == v.dtype and got.shape == v.shape
        assert np.array_equal(got, v)
        assert np.array_equal(got, one.read(vid))
    assert {k: a.top for k, a in one.upload_arenas.items()} == {
        k: a.top for k, a in many.upload_arenas.items()
    }


def test_upload_many_of_a_few_or_none():
    ex = _fresh_executor()
    ex.upload_many([], [])
    values = _values(np.random.default_rng(1))[:2]
    ex.upload_many([3, 4], values)
    for vid, v in zip([3, 4], values):
        assert np.array_equal(ex.read(vid), v)


def test_runs_with_unusual_input_layouts_give_the_same_results():
    """Inputs that are views, Fortran-ordered or read-only give what contiguous copies give."""
    xs, _ = batch("drnn", 6, 0)
    assert all(isinstance(a, np.ndarray) for a in xs[0])
    odd = []
    for i, inst in enumerate(xs):
        parts = []
        for a in inst:
            if i % 3 == 0:
                a = np.asfortranarray(a)
            elif i % 3 == 1:
                a = np.repeat(a, 2, axis=-1)[..., ::2]  # a strided view, same values
            else:
                a = a.copy()
                a.flags.writeable = False
            parts.append(a)
        odd.append(tuple(parts))
    prog = program("drnn")
    want = acrobat.run(prog, xs, strategy="batched").outputs
    got = acrobat.run(prog, odd, strategy="batched").outputs
    for i, (w, g) in enumerate(zip(want, got)):
        assert acrobat.values_equal(g, w, rtol=0, atol=0), f"instance {i}"


@pytest.mark.parametrize("shape", [(3, 4), (4,), ()])
def test_upload_many_of_one_shape_in_any_layout(shape):
    """Values of one shape and dtype (one concatenate, or one stack for 0-d) land in the
    rows one-by-one uploads give, whatever their layout: contiguous, Fortran-ordered,
    strided views."""
    rng = np.random.default_rng(3)

    def layout(i):
        a = rng.standard_normal(shape).astype(np.float32)
        if i % 3 == 1 and a.ndim == 2:
            return np.asfortranarray(a)
        if i % 3 == 2 and a.ndim:
            return np.repeat(a, 2, axis=-1)[..., ::2]
        return a

    values = [layout(i) for i in range(7)]
    vids = list(range(2, 9))
    one, many = _fresh_executor(), _fresh_executor()
    for vid, v in zip(vids, values):
        one.upload(vid, v)
    many.upload_many(range(2, 9), values)
    ids = np.array(vids)
    assert np.array_equal(one.row_of[ids], many.row_of[ids])
    assert np.array_equal(one.arena_of[ids], many.arena_of[ids])
    for vid, v in zip(vids, values):
        assert np.array_equal(many.read(vid), v) and many.read(vid).shape == v.shape
