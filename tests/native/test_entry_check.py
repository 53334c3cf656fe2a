"""The entry check of tensor parameters in one native call (``tensors_fit``, flush.c).

It must vouch only for instances the Python check accepts, name the first it cannot
vouch for, and leave every error to the Python check: ``entry_args_all`` gives the same
arguments, or raises the same error for the same instance, as one check per instance.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.ir import values as V
from acrobat.models import load
from acrobat.runtime.engines import native as native_engine

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"native kernel unavailable here: {native.status()}"
)

F32 = np.dtype(np.float32)


class _Sub(np.ndarray):
    pass


@needs_native
def test_tensors_fit_vouches_only_for_arrays_of_the_very_shape_and_dtype():
    fit = native.load().tensors_fit
    a, b = np.zeros(4, np.float32), np.ones((2, 3), np.float32)
    two = ((4,), F32), ((2, 3), F32)
    assert fit([], two, False) == -1
    assert fit([(a, b), (a.copy(), b.copy())], two, False) == -1
    assert fit([(a, b.view(_Sub))], two, False) == -1  # a subclass is an array
    Pair = collections.namedtuple("Pair", "a b")
    for bad in [
        (a, b.T),  # another shape
        (a, b.reshape(6)),  # another rank
        (a.astype(np.float64), b),
        (a.astype(">f4"), b),  # an equal dtype of another byte order: Python decides
        (a, b.tolist()),
        (a,),
        (a, b, b),
        [a, b],
        Pair(a, b),  # a tuple subclass: Python decides
        None,
    ]:
        assert fit([(a, b), bad, (a, b)], two, False) == 1, bad
    one = (((4,), F32),)
    assert fit([a, a + 1], one, True) == -1
    assert fit([a, (a,)], one, True) == 1
    assert fit([a, np.float32(1.0)], one, True) == 1
    with pytest.raises(ValueError):
        fit([a], two, True)  # one parameter said, two given
    with pytest.raises(TypeError):
        fit((a,), one, True)
    with pytest.raises(TypeError):
        fit([a], ((4,),), True)


def _variants(x):
    """Instances that fit, that do not, and that only the Python check can tell."""
    out = [x]
    if isinstance(x, np.ndarray):
        return [x, x.astype(np.float64), x.reshape(1, -1), x.astype(">f4"), x.tolist()]
    if isinstance(x, tuple):
        out += [x[:-1], x + x[-1:], list(x)]
        for i, v in enumerate(x):
            for w in _variants(v)[1:]:
                out.append(x[:i] + (w,) + x[i + 1 :])
    return out


@needs_native
@pytest.mark.parametrize("name", ["drnn", "berxit"])
def test_entry_args_all_answers_and_raises_as_one_check_per_instance(name):
    spec = load(name, "tiny")
    m = spec.module
    xs = list(spec.instances(4, seed=5))
    checks = native_engine.make()[0].checks
    assert V.entry_args_all(m, xs, checks) == [V.entry_args(m, x, i) for i, x in enumerate(xs)]
    tried = 0
    for wrong in _variants(xs[1])[1:]:
        mixed = [xs[0], wrong, xs[2], wrong]
        try:
            want = [V.entry_args(m, v, i) for i, v in enumerate(mixed)]
        except acrobat.InstanceError as one_err:
            with pytest.raises(acrobat.InstanceError) as err:
                V.entry_args_all(m, mixed, checks)
            assert str(err.value) == str(one_err) and err.value.index == one_err.index == 1
        else:
            got = V.entry_args_all(m, mixed, checks)
            assert len(got) == len(want) and all(g is w or g == w for g, w in zip(got, want))
        tried += 1
    assert tried >= 4


@needs_native
def test_a_run_with_tensor_inputs_of_another_byte_order_fails_as_before():
    spec = load("drnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    xs = list(spec.instances(3, seed=2))
    xs[2] = (xs[2][0].astype(">f4"), xs[2][1])
    with pytest.raises(acrobat.InstanceError, match=r"dtype") as err:
        acrobat.run(prog, xs, strategy="batched", trace_level="off")
    assert err.value.index == 2
