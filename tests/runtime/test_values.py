"""Instance values <-> value ids (acrobat.runtime.values), against a plain dict store."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.ir.types import INT, TensorType, TupleType
from acrobat.runtime.values import (
    array_bytes,
    from_handles,
    from_handles_all,
    has_tensor,
    list_heads,
    to_handles,
)
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


TREE_SRC = """
H = Size("H", 3)
C = Size("C", 2)
W: Param[H, H]
V: Param[C, H]

class T(ADT):
    Leaf: (Tensor[H], int)
    Node: (T, tuple[Tensor[H], Tensor[C]], T)

def grow(t: T) -> T:
    match t:
        case Leaf(x, k):
            return Leaf(tanh(dense(x, W)), k + 1)
        case Node(l, p, r):
            a, b = p
            return Node(grow(l), (tanh(a), sigmoid(b)), grow(r))

def count(xs: List[int], n: int) -> int:
    match xs:
        case Nil():
            return n
        case Cons(x, rest):
            return count(rest, n + x)

def main(t: T, xs: List[int]) -> tuple[T, T, List[int], int, Tensor[C]]:
    g = grow(t)
    return (g, g, xs, count(xs, 0), sigmoid(dense(tanh(dense(ones(H), W)), V)))
"""


def _tree(rng, depth):
    if depth == 0 or rng.random() < 0.3:
        return acrobat.AdtValue("Leaf", (rng.standard_normal(3).astype(np.float32), 1))
    pair = (rng.standard_normal(3).astype(np.float32), rng.standard_normal(2).astype(np.float32))
    return acrobat.AdtValue("Node", (_tree(rng, depth - 1), pair, _tree(rng, depth - 1)))


def test_trees_of_tensors_and_tuples_read_back_as_the_interpreter_gives_them():
    """Outputs with tensors in a tree (two recursive fields), in tuples inside it, in two
    tensor classes, a shared value, and fields with no tensor (an int list passed through,
    a host int from a self tail call that loops) equal the reference interpreter."""
    m = acrobat.parse(TREE_SRC)
    p = acrobat.init_params(m, 0)
    prog = acrobat.compile(m, p)
    rng = np.random.default_rng(0)
    xs = [(_tree(rng, d), acrobat.from_list(list(range(d)))) for d in range(6)]
    refs = [acrobat.evaluate(m, x, p) for x in xs]
    out = acrobat.run(prog, xs, strategy="batched").outputs
    for got, ref in zip(out, refs):
        assert acrobat.values_equal(got, ref, rtol=1e-5, atol=1e-6)
        assert got[3] == sum(range(len(acrobat.to_list(got[2]))))
    assert "for _ in range(" in prog.host_program.source  # count loops instead of recursing


def test_from_handles_all_reads_through_read_or_read_many():
    """A store with only ``read`` and the executor's ``read_many`` give equal values."""
    s = spec("berxit")
    m = s.module
    xs = s.instances(3, 0)
    (param,) = m.main.params
    store = DictStore()
    handles, nv = [], 0
    for x in xs:
        h, nv = to_handles(m, x, param.ty, store, nv)
        handles.append(h)
    back = from_handles_all(m, handles, param.ty, store)
    assert all(acrobat.values_equal(b, x) for b, x in zip(back, xs))
    assert acrobat.values_equal(from_handles(m, handles[1], param.ty, store), xs[1])


LINEAR_SRC = """
H = Size("H", 3)
T = TypeVar("T")

class Chain(ADT[T]):
    End: (T,)
    Link: (T, Chain[T])

class Tagged(ADT):
    Stop: ()
    Item: (int, Tensor[H], Tagged)

def main(
    xs: List[Tensor[H]], c: Chain[Tensor[H]], t: Tagged, n: List[List[Tensor[H]]]
) -> tuple[List[Tensor[H]], Chain[Tensor[H]], Tagged, List[List[Tensor[H]]]]:
    return xs, c, t, n
"""


def test_linear_values_of_one_tensor_per_node_round_trip_in_order():
    """Lists, chains and lists with an int beside the tensor (one tensor per node: the
    walker's loop for them), a list of lists (the general walker), and a list far deeper
    than the recursion limit read back as they were, every tensor in its place."""
    m = acrobat.parse(LINEAR_SRC)
    ty = TupleType(tuple(p.ty for p in m.main.params))
    rng = np.random.default_rng(0)

    def vec():
        return rng.standard_normal(3).astype(np.float32)

    def value(n):
        xs = acrobat.from_list([vec() for _ in range(n)])
        c = acrobat.AdtValue("End", (vec(),))
        for _ in range(n):
            c = acrobat.AdtValue("Link", (vec(), c))
        t = acrobat.AdtValue("Stop", ())
        for i in range(n):
            t = acrobat.AdtValue("Item", (i, vec(), t))
        nested = acrobat.from_list([acrobat.from_list([vec() for _ in range(k)]) for k in range(n)])
        return xs, c, t, nested

    values = [value(n) for n in (0, 1, 2, 5)] + [
        value(0)[:0] + (acrobat.from_list([vec() for _ in range(30000)]),) + value(1)[1:]
    ]
    store = DictStore()
    handles, nv = [], 0
    for v in values:
        h, nv = to_handles(m, v, ty, store, nv)
        handles.append(h)
    back = from_handles_all(m, handles, ty, store)
    for b, v in zip(back, values):
        assert acrobat.values_equal(b, v)
    assert back[3][2].fields[0] == 4  # the int beside the tensor is kept


class ManyStore(DictStore):
    """A store with ``read_many`` (as the executor has): the path ``heads`` takes."""

    def read_many(self, vids):
        return [self.read(v) for v in vids]


def test_list_heads_taken_early_rebuild_the_lists_as_the_walk_does():
    """:func:`list_heads` of lists of tensors (empty, one, many, very long) and
    ``from_handles_all(..., heads)`` give the values the general walk gives; other types
    (a chain, a tuple holding lists) have no heads and keep the walk."""
    m = acrobat.parse(LINEAR_SRC)
    lst, chain = m.main.params[0].ty, m.main.params[1].ty
    rng = np.random.default_rng(1)
    values = [
        acrobat.from_list([rng.standard_normal(3).astype(np.float32) for _ in range(n)])
        for n in (0, 1, 4, 20000)
    ]
    store = ManyStore()
    handles, nv = [], 0
    for v in values:
        h, nv = to_handles(m, v, lst, store, nv)
        handles.append(h)
    maker = acrobat.native.adt_maker(acrobat.AdtValue)
    assert list_heads(m, lst, handles) is None  # no maker given: the walk decides
    heads = list_heads(m, lst, handles, maker)
    if heads is None:  # no native module: nothing taken, the walk decides
        assert maker is None
    else:
        assert [len(h) for h in heads] == [0, 1, 4, 20000]
        assert heads[2] == acrobat.to_list(handles[2])
    back = from_handles_all(m, handles, lst, store, heads, maker)
    walked = from_handles_all(m, handles, lst, store)
    for b, w, v in zip(back, walked, values):
        assert acrobat.values_equal(b, v) and acrobat.values_equal(w, v)
    assert list_heads(m, chain, handles[:0]) is None  # not a Cons/Nil list of tensors
    tup = TupleType((lst, lst))
    assert list_heads(m, tup, [(handles[1], handles[2])]) is None


def test_list_of_tensor_outputs_equal_the_interpreter_on_both_host_programs():
    """A program returning a list of tensors (BiRNN), run with the Python and the C host
    program: outputs equal the interpreter's, empty sequences included."""
    s = spec("birnn")
    prog = acrobat.compile(s.module, s.params)
    xs = s.instances(6, 0) + [acrobat.from_list([])]
    refs = [acrobat.evaluate(s.module, x, s.params) for x in xs]
    runtime = acrobat.runtime.run.prepare(prog, "numpy")
    for mode in ("0", "1"):
        runtime.host_c_mode = mode
        res = acrobat.run(prog, xs, strategy="batched")
        assert (res.stats.host_code == "c") == (mode == "1" and runtime.host_c is not None)
        for got, ref in zip(res.outputs, refs):
            assert acrobat.values_equal(got, ref, rtol=1e-4, atol=1e-5)
