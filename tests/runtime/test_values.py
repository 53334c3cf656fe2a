"""Instance values <-> value ids (acrobat.runtime.values), against a plain dict store."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.ir.types import INT, TensorType, TupleType
from acrobat.runtime.values import array_bytes, from_handles, has_tensor, to_handles
from tests.runtime.helpers import spec


class DictStore:
    def __init__(self):
        self.values = {}

    def upload(self, vid, value):
        self.values[vid] = value.copy()

    def read(self, vid):
        return self.values[vid].copy()


def test_round_trip_through_value_ids():
    s = spec("berxit")  # its instances hold tensors
    m = s.module
    (x,) = s.instances(1, 0)
    (param,) = m.main.params
    assert has_tensor(m, param.ty)
    store = DictStore()
    handles, next_vid = to_handles(m, x, param.ty, store, 5)
    assert next_vid - 5 == len(store.values) > 0
    assert sorted(store.values) == list(range(5, next_vid))
    back = from_handles(m, handles, param.ty, store)
    assert acrobat.values_equal(back, x)
    assert array_bytes([x]) == sum(v.nbytes for v in store.values.values())


def test_has_tensor_by_type():
    m = spec("treelstm").module
    assert not has_tensor(m, m.main.params[0].ty)  # a tree of word ids
    t = TensorType((2,), "float32")
    assert has_tensor(m, t) and has_tensor(m, TupleType((INT, t)))
    assert not has_tensor(m, INT) and not has_tensor(m, TupleType((INT, INT)))
    assert not has_tensor(m, TupleType(()))
    assert array_bytes([(1, np.zeros(3, np.float32))]) == 12
