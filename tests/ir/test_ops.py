"""The op registry: every op has a shape rule and an implementation that agree."""

import numpy as np
import pytest

from acrobat.errors import AcrobatShapeError, AcrobatTypeError
from acrobat.ir.ops import REGISTRY, infer_op
from acrobat.ir.types import BOOL, FLOAT, INT, AdtType, TensorType, TupleType
from acrobat.ir.values import from_list

T = TensorType


def L(t):
    return AdtType("List", (t,))


CASES = [
    ("dense", [T((4,)), T((3, 4)), T((3,))], {}, T((3,))),
    ("dense", [T((5, 4)), T((3, 4))], {}, T((5, 3))),
    ("matmul", [T((2, 4)), T((4, 3))], {}, T((2, 3))),
    ("matmul", [T((4, 4)), T((4,))], {}, T((4,))),
    ("batch_matmul", [T((2, 5, 8)), T((2, 5, 8))], {"transpose_b": True}, T((2, 5, 5))),
    ("add", [T((4,)), T(())], {}, T((4,))),
    ("mul", [T((3, 1)), T((4,))], {}, T((3, 4))),
    ("concat", [T((2,)), T((3,))], {}, T((5,))),
    ("concat", [T((2, 4)), T((3, 4))], {"axis": 0}, T((5, 4))),
    ("split", [T((6,))], {"sections": 3}, TupleType((T((2,)),) * 3)),
    ("slice", [T((6, 2))], {"start": 1, "stop": 4}, T((3, 2))),
    ("reshape", [T((6,))], {"shape": (2, -1)}, T((2, 3))),
    ("transpose", [T((2, 3, 4))], {"axes": (1, 0, 2)}, T((3, 2, 4))),
    ("softmax", [T((2, 3))], {"axis": -1}, T((2, 3))),
    ("layer_norm", [T((2, 3)), T((3,)), T((3,))], {}, T((2, 3))),
    ("sum", [T((2, 3))], {"axis": 0}, T((3,))),
    ("mean", [T((2, 3))], {}, T(())),
    ("max", [T((2, 3))], {"axis": 1, "keepdims": True}, T((2, 1))),
    ("embed", [T((10, 4)), INT], {}, T((4,))),
    ("zeros", [], {"shape": (2, 3)}, T((2, 3))),
    ("ones", [], {"shape": 4}, T((4,))),
    ("item", [T((1,))], {}, FLOAT),
    ("argmax", [T((5,))], {}, INT),
    ("h.lt", [INT, FLOAT], {}, BOOL),
    ("h.add", [INT, INT], {}, INT),
    ("h.truediv", [INT, INT], {}, FLOAT),
    ("h.and", [BOOL, BOOL], {}, BOOL),
    ("ghost", [], {"count": 2}, TupleType(())),
    ("scalar", [INT], {}, TensorType(())),
    ("scalar", [FLOAT], {}, TensorType(())),
    ("list_sum", [L(T((3,)))], {"shape": (3,)}, T((3,))),
    ("list_max", [L(T((2, 3)))], {}, T((2, 3))),
    ("list_attend", [L(T((3,))), L(T((2, 4))), T((3,))], {}, T((2, 4))),
    ("list_argmax", [L(T((1,)))], {}, INT),
]


def value_for(t, rng):
    if isinstance(t, AdtType):  # a List of three
        return from_list([value_for(t.args[0], rng) for _ in range(3)])
    if isinstance(t, TensorType):
        return rng.standard_normal(t.shape).astype(np.float32)
    return {INT: 3, FLOAT: 1.5, BOOL: True}[t]


def shape_of(v):
    if isinstance(v, tuple):
        return TupleType(tuple(shape_of(x) for x in v))
    if isinstance(v, np.ndarray):
        return TensorType(v.shape, str(v.dtype))
    return {bool: BOOL, int: INT, float: FLOAT}[type(v)]


@pytest.mark.parametrize("op,args,attrs,want", CASES, ids=[c[0] for c in CASES])
def test_rule_and_impl_agree(op, args, attrs, want):
    assert infer_op(op, args, attrs) == want
    rng = np.random.default_rng(0)
    full = {**{k: v for k, v in REGISTRY[op].attrs.items() if k not in attrs}, **attrs}
    out = REGISTRY[op].impl(*[value_for(a, rng) for a in args], **full)
    assert shape_of(out) == want


def test_every_op_is_covered_or_elementwise():
    covered = {c[0] for c in CASES}
    for name, op in REGISTRY.items():
        assert name in covered or op.kind in ("elemwise", "broadcast", "host"), name
        assert op.kind in {
            "elemwise",
            "broadcast",
            "injective",
            "reduction",
            "opaque",
            "create",
            "host_read",
            "host",
            "ghost",
        }


@pytest.mark.parametrize(
    "op,args,attrs,err",
    [
        ("dense", [T((5,)), T((3, 4))], {}, AcrobatShapeError),
        ("add", [T((3,)), T((4,))], {}, AcrobatShapeError),
        ("split", [T((5,))], {"sections": 2}, AcrobatShapeError),
        ("reshape", [T((5,))], {"shape": (2, 3)}, AcrobatShapeError),
        ("embed", [T((10, 4)), FLOAT], {}, AcrobatTypeError),
        ("sigmoid", [T((4,)), T((4,))], {}, AcrobatTypeError),
        ("softmax", [T((4,))], {"dim": 0}, AcrobatTypeError),
        ("list_sum", [T((3,))], {"shape": (3,)}, AcrobatTypeError),
        ("list_sum", [L(T((3,)))], {"shape": (4,)}, AcrobatTypeError),
        ("list_max", [L(INT)], {}, AcrobatTypeError),
        ("list_argmax", [L(T((2,)))], {}, AcrobatTypeError),
        ("list_attend", [L(T((3,))), L(T((2,))), T((4,))], {}, AcrobatTypeError),
        ("split", [T((4,))], {}, AcrobatTypeError),
        ("item", [T((2,))], {}, AcrobatShapeError),
        ("nope", [], {}, AcrobatTypeError),
    ],
)
def test_rule_errors(op, args, attrs, err):
    with pytest.raises(err):
        infer_op(op, args, attrs)
