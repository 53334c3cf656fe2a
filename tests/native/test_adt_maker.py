"""acrobat.native's ADT maker (``values.c``) and the runtime's use of it.

The maker must make exactly what :class:`AdtValue` makes (the same class, the same
fields, equal values), build and read lists as ``from_list`` / ``to_list`` do, refuse
what it cannot do with a ``TypeError`` (never a crash), keep reference counts right
(values freed when dropped, long lists built and freed without recursion), and the
runtime's :func:`adt_maker` must fall back to Python with the native module off.
"""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import weakref

import numpy as np
import pytest

import acrobat
from acrobat import native
from acrobat.ir.values import AdtValue, from_list, to_list, values_equal
from acrobat.models import load
from acrobat.runtime.engines import native as native_engine
from acrobat.runtime.engines import reference

needs_native = pytest.mark.skipif(
    native.load() is None, reason=f"native kernel unavailable here: {native.status()}"
)


@needs_native
def test_maker_makes_the_classes_own_values():
    make = native.adt_maker(AdtValue)
    assert make is native.adt_maker(AdtValue)  # one per class
    leaf = make("Leaf", (3,))
    node = make("Node", (leaf, make("Leaf", [4])))  # a list becomes a tuple, as __init__ does
    assert type(node) is AdtValue and type(leaf) is AdtValue
    assert node.ctor == "Node" and isinstance(node.fields, tuple) and len(node.fields) == 2
    assert node.fields[1].fields == (4,)
    assert make("Nil").fields == () and make("Nil", ()).fields == ()
    assert node == AdtValue("Node", (AdtValue("Leaf", (3,)), AdtValue("Leaf", (4,))))
    assert repr(node) == repr(AdtValue("Node", (leaf, AdtValue("Leaf", (4,)))))
    # values are immutable, however they were made
    for v in (node, AdtValue("Node", (leaf,))):
        with pytest.raises(AttributeError, match="immutable"):
            v.ctor = "Other"
        with pytest.raises(AttributeError, match="immutable"):
            del v.fields
        with pytest.raises(AttributeError):
            v.extra = 1
    assert node.ctor == "Node"


@needs_native
def test_values_of_inert_fields_stay_out_of_the_cycle_collector():
    """A made value whose fields hold only arrays, numbers, strings, untracked tuples or
    such values is untracked, with its fields tuple (as CPython untracks such tuples); one
    holding anything the collector tracks stays tracked, and so do the values above it."""
    make = native.adt_maker(AdtValue)
    lst = make.list([np.zeros(3, np.float32), np.ones(2, np.float32)])
    assert not gc.is_tracked(lst) and not gc.is_tracked(lst.fields)
    assert not gc.is_tracked(make("Leaf", (3, 2.5, "x", None, (1, 2))))
    assert not gc.is_tracked(make("Nil")) and not gc.is_tracked(make("Node", (lst, lst)))

    class Box:
        pass

    box = Box()
    holds = make("Leaf", (box,))
    assert gc.is_tracked(holds) and gc.is_tracked(make("Node", (holds, lst)))
    assert gc.is_tracked(make("Node", (AdtValue("Nil"),)))  # made in Python: tracked
    # a value that holds a container can still be collected on a cycle through it
    box.held = holds
    ref = weakref.ref(box)
    del box, holds
    gc.collect()
    assert ref() is None

    # a class not declared frozen keeps its values tracked
    class Open:
        __slots__ = ("ctor", "fields")

    assert gc.is_tracked(native.adt_maker(Open)("Nil"))


def test_values_pickle_and_copy():
    v = AdtValue("Cons", (np.arange(3, dtype=np.float32), AdtValue("Nil")))
    for w in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v), copy.copy(v)):
        assert type(w) is AdtValue and values_equal(w, v)


@needs_native
@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000])
def test_lists_equal_from_list_and_to_list(n):
    make = native.adt_maker(AdtValue)
    items = [("x", i) for i in range(n)]
    built = make.list(items)
    assert values_equal(built, from_list(items))
    assert make.items(built) == items == to_list(built)
    assert make.items(from_list(items)) == items
    assert make.list(tuple(items)) == built and make.list(iter(items)) == built


@needs_native
def test_a_100000_long_list_is_built_read_and_freed_without_recursion():
    make = native.adt_maker(AdtValue)
    xs = list(range(100_000))
    lst = make.list(xs)
    assert make.items(lst) == xs

    class Probe:
        pass

    probe = Probe()
    ref = weakref.ref(probe)
    lst = make("Cons", (probe, lst))
    del probe
    assert ref() is not None
    del lst
    gc.collect()
    assert ref() is None


@needs_native
def test_reference_counts_are_kept():
    make = native.adt_maker(AdtValue)
    ctor, fields = "K" + str(id(object())), (object(),)
    before = sys.getrefcount(ctor), sys.getrefcount(fields), sys.getrefcount(fields[0])
    values = [make(ctor, fields) for _ in range(100)]
    assert sys.getrefcount(ctor) == before[0] + 100
    del values
    assert (sys.getrefcount(ctor), sys.getrefcount(fields), sys.getrefcount(fields[0])) == before
    payload = object()
    count = sys.getrefcount(payload)
    lst = make.list([payload] * 10)
    items = make.items(lst)
    del lst, items
    assert sys.getrefcount(payload) == count


@needs_native
def test_what_it_cannot_do_raises_type_error():
    make = native.adt_maker(AdtValue)
    with pytest.raises(TypeError):
        make()
    with pytest.raises(TypeError):
        make("A", (), 1)
    with pytest.raises(TypeError):
        make("A", fields=())
    with pytest.raises(TypeError):
        make("A", 5)  # fields not iterable
    with pytest.raises(TypeError):
        make.list(5)
    with pytest.raises(TypeError, match="list value"):
        make.items(5)
    with pytest.raises(TypeError, match="list value"):
        make.items(make("Cons", (1, 2)))  # the tail is not a value
    with pytest.raises(TypeError, match="head, tail"):
        make.items(make("Cons", (1,)))
    # classes it cannot fill
    mod = native.load()

    class Dict:
        pass

    class OneSlot:
        __slots__ = ("ctor",)

    class Inherited(AdtValue):  # slots live on the base, not on this class
        __slots__ = ()

    for cls in (int, Dict, OneSlot, Inherited, tuple):
        with pytest.raises(TypeError):
            mod.adt_maker(cls)
    with pytest.raises(TypeError):
        mod.adt_maker(42)


def test_the_reference_engines_maker_is_python():
    make = reference.PYTHON_MAKER
    v = make("Cons", [1, make("Nil")])
    assert type(v) is AdtValue and v.fields[0] == 1
    assert make.items(make.list([1, 2, 3])) == [1, 2, 3]


@pytest.mark.parametrize("name", ["birnn", "treelstm", "stackrnn", "mvrnn"])
def test_models_give_the_same_values_with_the_python_maker(name):
    spec = load(name, "small")
    prog = acrobat.compile(spec.module, spec.params)
    xs = spec.instances(5, seed=3)
    run = dict(policy="acrobat", strategy="batched", trace_level="off")
    fast = acrobat.run(prog, xs, engine="native", **run)
    slow = acrobat.run(prog, xs, engine="reference", **run)
    assert slow.stats.engine.startswith("reference")
    assert values_equal(fast.outputs, slow.outputs, rtol=1e-5, atol=1e-6)
    assert values_equal(fast.outputs, [spec.reference(x) for x in xs], rtol=1e-4, atol=1e-5)


def _mutations(v):
    """Values near ``v``: each a small change of one node somewhere in it."""
    out = []
    if isinstance(v, AdtValue):
        out += [AdtValue("NoSuchCtor", v.fields), AdtValue(v.ctor, v.fields + (1,))]
        out += [AdtValue(v.ctor, v.fields[:-1])] if v.fields else []
        for i, f in enumerate(v.fields):
            for g in [True, 1.5, "x", None, np.float32(1), *_mutations(f)[:4]]:
                out.append(AdtValue(v.ctor, v.fields[:i] + (g,) + v.fields[i + 1 :]))
    elif isinstance(v, tuple):
        out += [v[:-1], v + (0,), list(v)]
        for i, f in enumerate(v):
            out += [v[:i] + (g,) + v[i + 1 :] for g in _mutations(f)[:3]]
    elif isinstance(v, np.ndarray):
        out += [v.astype(np.float64), v.reshape(-1)[:1], v.tolist()]
    elif type(v) is int:
        out += [True, 2.0, np.int64(3), -(2**70)]
    return out


@needs_native
@pytest.mark.parametrize("name", ["birnn", "treelstm", "drnn", "stackrnn", "mvrnn", "berxit"])
def test_the_c_type_check_answers_as_the_python_one(name):
    from acrobat.ir import values as V

    spec = load(name, "small")
    m = spec.module
    cache = V._tables(m)
    checked = 0
    for x in spec.instances(4, seed=7):
        args = (x,) if len(m.main.params) == 1 else x
        for p, a in zip(m.main.params, args):
            for candidate in [a, *_mutations(a), 5, None, (a,)]:
                assert V._fits(m, candidate, p.ty) == V._fits_python(m, candidate, p.ty, cache)
                checked += 1
    assert checked > 20


@needs_native
def test_relist_rebuilds_a_list_with_new_heads_tail_first():
    make = native.adt_maker(AdtValue)
    lst = from_list([10, 11, 12])
    new, at = make.relist(lst, ["a", "b", "c", "d", "e"], 1)
    assert at == 4 and to_list(new) == ["d", "c", "b"]  # the last Cons took items[1]
    assert type(new) is AdtValue and to_list(lst) == [10, 11, 12]  # the input is kept
    nil = from_list([])
    same, at = make.relist(nil, [], 0)
    assert same is nil and at == 0
    assert make.relist(AdtValue("Leaf", (1,)), [1], 0) is None  # not a list: left to Python
    assert make.relist(AdtValue("Cons", (1, AdtValue("Leaf", ()))), [1], 0) is None
    assert make.relist(5, [], 0) is None
    with pytest.raises(IndexError):
        make.relist(lst, ["a"], 0)
    with pytest.raises(TypeError):
        make.relist(lst, ("a", "b", "c"), 0)  # items must be a list


@needs_native
@pytest.mark.parametrize(
    "name", ["birnn", "treelstm", "stackrnn", "mvrnn", "nestedrnn", "treelstm_childsum"]
)
def test_the_c_check_of_a_list_of_values_finds_the_first_misfit(name):
    """``maker.fits(values, ..., True)``: -1 when every value fits, else the index of the
    first one that does not, as the one-value check answers each; ``entry_args_all``
    answers and raises as the per-instance check does."""
    from acrobat.ir import values as V

    spec = load(name, "small")
    m = spec.module
    xs = list(spec.instances(6, seed=3))
    (p,) = m.main.params
    checks = native_engine.make()[0].checks
    fits_all = V._checker(m, p.ty, many=True, walk=checks.fits)
    berxit = load("berxit", "small").module.main.params[0].ty
    assert V._checker(m, berxit, many=True, walk=checks.fits) is None
    assert V._checker(m, p.ty, many=True) is None  # no native walk given: none offered
    assert fits_all(xs) == -1 and fits_all([]) == -1
    assert V.entry_args_all(m, xs, checks) == [(x,) for x in xs]
    bad = _mutations(xs[2])
    for wrong in [*bad, 5, None]:
        mixed = xs[:2] + [wrong] + xs[3:] + [wrong]
        one = [V._fits(m, v, p.ty) for v in mixed]
        want = one.index(False) if False in one else -1
        assert fits_all(mixed) == want
        # the same answer or error as one by one (a misfit the explanation lets pass, an
        # int field holding a NumPy int, passes both ways)
        try:
            one_by_one = [V.entry_args(m, v, i) for i, v in enumerate(mixed)]
        except acrobat.InstanceError as one_err:
            with pytest.raises(acrobat.InstanceError) as err:
                V.entry_args_all(m, mixed, checks)
            assert str(err.value) == str(one_err) and err.value.index == one_err.index
        else:
            assert V.entry_args_all(m, mixed, checks) == one_by_one
    with pytest.raises(TypeError, match="list of values"):
        native.adt_maker(AdtValue).fits(tuple(xs), p.ty, None, None, None, None, True)


@needs_native
def test_lists_split_items_into_lists_of_the_given_lengths():
    make = native.adt_maker(AdtValue)
    items = list(range(7))
    like = [[0, 0], [], [0, 0, 0, 0, 0], []]
    out = make.lists(items, like)
    assert [to_list(x) for x in out] == [[0, 1], [], [2, 3, 4, 5, 6], []]
    assert all(type(x) is AdtValue for x in out)
    assert out == [make.list(items[0:2]), make.list([]), make.list(items[2:]), make.list([])]
    assert make.lists([], []) == []
    with pytest.raises(ValueError, match="8 items for lists of 7"):
        make.lists(items + [7], like)
    with pytest.raises(TypeError):
        make.lists(tuple(items), like)
    with pytest.raises(TypeError):
        make.lists(items, [(0,) * 7])


class _Arena:
    def __init__(self, buf, shape):
        self.buf, self.shape = buf, shape


@needs_native
def test_read_rows_copies_rows_into_views_as_read_many_makes_them():
    """``read_rows``: the rows of lists of value ids copied into one new array, each id's
    tensor a writable C-contiguous view of its row, shaped as the arena's tensors; None
    (the caller's general read) where it does not apply."""
    mod = native.load()
    rng = np.random.default_rng(0)
    a0 = _Arena(rng.standard_normal((10, 6)).astype(np.float32), (2, 3))
    a1 = _Arena(rng.standard_normal((4, 6)), (6,))
    scalar = _Arena(np.zeros((3, 1), np.float32), ())
    row_of = np.array([3, 0, 9, 1, 2, 0, 7, 5], np.int64)
    arena_of = np.array([0, 0, 0, 1, 1, 2, 0, 0], np.int16)
    arenas = [a0, a1, scalar]
    heads = [[0, 2], [], [6, 0, 7]]
    got = mod.read_rows(arenas, heads, row_of, arena_of)
    flat = [0, 2, 6, 0, 7]
    assert len(got) == 5
    for v, x in zip(flat, got):
        want = a0.buf[row_of[v]].reshape(2, 3)
        assert type(x) is np.ndarray and x.dtype == np.float32 and x.shape == (2, 3)
        assert np.array_equal(x, want) and x.flags.c_contiguous and x.flags.writeable
        assert not np.shares_memory(x, a0.buf)  # a copy: the arena's rows are reused
    got[0][0, 0] = 99.0  # views of one block, each its own row
    assert got[1][0, 0] != 99.0 and a0.buf[3, 0] != 99.0
    f64 = mod.read_rows(arenas, [[3], [4]], row_of, arena_of)
    assert [x.dtype for x in f64] == [np.float64] * 2 and np.array_equal(f64[1], a1.buf[2])
    assert mod.read_rows(arenas, [], row_of, arena_of) == []
    assert mod.read_rows(arenas, [[], []], row_of, arena_of) == []
    for bad_heads in (
        [[0, 3]],  # two arenas
        [[5]],  # a scalar arena (its reads are numbers, not views)
        [[8]],  # past row_of
        [[-1]],
        [(0, 2)],  # a tuple of ids
        [[np.int64(0)]],
        [[True]],
    ):
        assert mod.read_rows(arenas, bad_heads, row_of, arena_of) is None, bad_heads
    for bad_arena in (-1, 3):  # no such arena
        assert mod.read_rows(arenas, [[0]], row_of, np.full(8, bad_arena, np.int16)) is None
    far = np.array([30], np.int64)
    assert mod.read_rows(arenas, [[0]], far, arena_of[:1]) is None  # a row past the buffer
    assert mod.read_rows(arenas, [[0]], row_of.astype(np.int32), arena_of) is None
    assert mod.read_rows(arenas, [[0]], row_of, arena_of.astype(np.int64)) is None
    assert mod.read_rows([_Arena(a0.buf[:, ::2], (3,))], [[0]], row_of, arena_of) is None
    with pytest.raises(TypeError):
        mod.read_rows(arenas, heads, row_of)


@needs_native
def test_list_outputs_are_read_in_one_native_call_with_the_same_values(monkeypatch):
    """A run's list-of-tensor results read through ``Executor.read_heads`` equal the ones
    read id by id, and the interpreter's."""
    from acrobat.runtime import executor as E

    spec = load("birnn", "tiny")
    xs = list(spec.instances(5, seed=1))
    xs.append(type(xs[0])([]) if isinstance(xs[0], list) else from_list([]))  # empty: []
    prog = acrobat.compile(spec.module, spec.params)
    calls = []
    real = E.Executor.read_heads

    def spy(self, heads):
        out = real(self, heads)
        ids = [i for h in heads for i in h]
        calls.append(len(ids))
        assert self.native_rows(self.arena_list, heads, self.row_of, self.arena_of) is not None
        for a, i in zip(out, ids, strict=True):
            assert np.array_equal(a, self.read(i)) and a.shape == self.read(i).shape
        return out

    monkeypatch.setattr(E.Executor, "read_heads", spy)
    got = acrobat.run(prog, xs, strategy="batched", trace_level="off").outputs
    assert calls and calls[-1] == sum(len(to_list(x)) for x in got) > 0
    assert values_equal(got, [spec.reference(x) for x in xs], rtol=1e-4, atol=1e-5)
