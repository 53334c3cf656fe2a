"""Inputs and settings users get wrong, and inputs at the edges (issue #5, item 3).

Every mistake a user can make gives a typed ``AcrobatError`` that says which instance or
name is wrong, never a traceback from deep inside, and leaves the program usable.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import acrobat
from acrobat.models.data import degenerate_tree
from acrobat.runtime.arena import Arena, ArenaLimitError
from tests.runtime.helpers import (
    FIBER_MODELS,
    MODELS,
    POLICIES,
    assert_outputs_equal,
    batch,
    program,
    spec,
)

# -- empty batches ------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("backend", ["numpy", "null"])
def test_empty_batch_gives_empty_outputs(model, backend):
    res = acrobat.run(program(model), [], backend=backend)
    assert res.outputs == []
    assert res.stats["launches"] == 0
    assert res.stats["nodes"] == 0
    assert res.stats["mean_batch"] == 0.0


def test_empty_batch_from_an_iterator():
    assert acrobat.run(program("treelstm"), iter(())).outputs == []


# -- instances of the wrong type ----------------------------------------------------------

WRONG = {
    "int": 5,
    "str": "tree",
    "None": None,
    "list for a tree": acrobat.from_list([1, 2]),
    "str leaf": acrobat.AdtValue("Leaf", ("a",)),
    "leaf arity": acrobat.AdtValue("Leaf", (1, 2)),
}


@pytest.mark.parametrize("bad", list(WRONG.values()), ids=list(WRONG))
@pytest.mark.parametrize("where", [0, 1, 3])
def test_wrong_type_names_the_instance(bad, where):
    xs, refs = batch("treelstm", 4, 0)
    xs = list(xs)
    xs[where] = bad
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(program("treelstm"), xs)
    assert err.value.index == where
    assert f"instance {where}" in str(err.value)
    # nothing half-done: the next run on the same program is correct
    good, good_refs = batch("treelstm", 4, 0)
    assert_outputs_equal(acrobat.run(program("treelstm"), good).outputs, good_refs)


@pytest.mark.parametrize("model", FIBER_MODELS)
def test_wrong_type_in_a_fiber_program(model):
    xs, refs = batch(model, 3, 0)
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(program(model), [xs[0], xs[1], "not an instance"])
    assert err.value.index == 2
    assert_outputs_equal(acrobat.run(program(model), xs).outputs, refs)


def _berxit_bad():
    x = batch("berxit", 1, 0)[0][0]
    return {
        "float64": x.astype(np.float64),
        "int64": x.astype(np.int64),
        "narrow": x[:, :4],
        "list": x.tolist(),
        "tuple": (x,),
    }


@pytest.mark.parametrize("kind", list(_berxit_bad()))
def test_wrong_tensor_input_names_the_instance(kind):
    xs, refs = batch("berxit", 3, 0)
    bad = _berxit_bad()[kind]
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(program("berxit"), [xs[0], xs[1], bad])
    assert err.value.index == 2
    assert_outputs_equal(acrobat.run(program("berxit"), xs).outputs, refs)


@pytest.mark.parametrize("word", [-1, 50, 10**6])
def test_out_of_vocabulary_word_names_the_instance(word):
    xs, _ = batch("treelstm", 3, 0)
    assert spec("treelstm").sizes["V"] == 50
    bad = acrobat.AdtValue("Node", (xs[1], acrobat.AdtValue("Leaf", (word,))))
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(program("treelstm"), [xs[0], bad, xs[2]])
    assert err.value.index == 1


# -- deep inputs --------------------------------------------------------------------------


def test_degenerate_tree_5000_deep_runs_batched():
    deep = degenerate_tree(5000, lambda i: i % 50)
    xs, refs = batch("treelstm", 3, 0)
    limit = sys.getrecursionlimit()
    res = acrobat.run(program("treelstm"), [xs[0], deep, xs[1]])
    assert sys.getrecursionlimit() == limit  # restored after the run
    assert_outputs_equal(res.outputs, [refs[0], spec("treelstm").evaluate(deep), refs[1]])
    assert res.stats["launches"] >= 5001  # the chain: one level per node, leaves in one


def test_long_sequence_5000_tokens_runs_batched():
    long = acrobat.from_list([i % 50 for i in range(5000)])
    xs, refs = batch("birnn", 2, 0)
    res = acrobat.run(program("birnn"), [long, *xs])
    assert_outputs_equal(res.outputs, [spec("birnn").evaluate(long), *refs])


# -- memory -------------------------------------------------------------------------------


def _refused_run(model, limit, monkeypatch) -> list[int]:
    """Run ``model`` under ``limit`` (expecting a refusal); the bytes of each allocation."""
    xs, _ = batch(model, 6, 0)
    prog = program(model)
    acrobat.run(prog, xs)  # warm: kernels compiled, arenas exist
    allocated: list[int] = []
    real_alloc = Arena.alloc

    def counting_alloc(self, n):
        allocated.append(n * self.width * self.dtype.itemsize)
        return real_alloc(self, n)

    with monkeypatch.context() as mp:
        mp.setattr(Arena, "alloc", counting_alloc)
        with pytest.raises(ArenaLimitError) as err:
            acrobat.run(prog, xs, memory_limit=limit)
    assert isinstance(err.value, acrobat.AcrobatError)
    assert err.value.hint  # says what to do
    return allocated


@pytest.mark.parametrize("model", ["treelstm", "stackrnn"])
@pytest.mark.parametrize("limit", [0, 1000, 3000])
def test_batch_too_large_for_memory_is_refused_before_allocating(model, limit, monkeypatch):
    """The limit is checked before each pass allocates: never more than the limit is taken.

    (A fiber program such as StackRNN may run some passes before one would not fit.)"""
    allocated = _refused_run(model, limit, monkeypatch)
    assert sum(allocated) <= limit
    if model == "treelstm":  # one pass: refused before anything at all
        assert allocated == []
    # nothing half-done: a normal run right after is complete and correct
    xs, refs = batch(model, 6, 0)
    assert_outputs_equal(acrobat.run(program(model), xs).outputs, refs, f"{model} after refusal")


def test_a_fiber_program_is_refused_at_the_first_flush_that_would_not_fit(monkeypatch):
    """The runtime counts the arena bytes only when a cheap bound on them passes the limit
    (``Runtime.check_memory``): a limit between two flushes' needs still lets exactly the
    flushes that fit run, and refuses the first that does not, as counting at every flush
    would."""
    from acrobat.runtime.run import Runtime

    xs, refs = batch("stackrnn", 6, 0)
    prog = program("stackrnn")
    acrobat.run(prog, xs)  # warm: kernels compiled, arenas exist
    needs: list[int] = []  # each flush's exact need: the rows in use plus its outputs
    real = Runtime.check_memory

    def exact(self, st, dfg, nodes):
        needs.append(self.pool.used_bytes() + self.executor.output_bytes(dfg))
        return real(self, st, dfg, nodes)

    # (the flushes in Python: the compiled fiber program's FiberFlush keeps the same bound
    # in C, test_flush_native.py)
    monkeypatch.setattr(Runtime, "fiber_flush", lambda self, st, hs, take: None)
    with monkeypatch.context() as mp:
        mp.setattr(Runtime, "check_memory", exact)
        acrobat.run(prog, xs)
    assert len(needs) > 4 and needs == sorted(needs)
    limit = (needs[len(needs) // 2] + needs[len(needs) // 2 + 1]) // 2
    fits = sum(n <= limit for n in needs)
    ran: list[int] = []
    with monkeypatch.context() as mp:
        mp.setattr(Runtime, "check_memory", lambda *a: ran.append(1) or real(*a))
        with pytest.raises(ArenaLimitError):
            acrobat.run(prog, xs, memory_limit=limit)
    assert len(ran) == fits + 1  # every flush that fits, then the refused one
    assert_outputs_equal(acrobat.run(prog, xs).outputs, refs, "stackrnn after refusal")


def test_memory_limit_also_bounds_uploaded_inputs(monkeypatch):
    assert sum(_refused_run("berxit", 1000, monkeypatch)) <= 1000


def test_memory_limit_equal_to_the_peak_is_enough():
    xs, refs = batch("treelstm", 6, 0)
    prog = program("treelstm")
    peak = acrobat.run(prog, xs).stats["peak_arena_bytes"]
    assert peak > 0
    res = acrobat.run(prog, xs, memory_limit=peak)
    assert_outputs_equal(res.outputs, refs)
    assert res.stats["peak_arena_bytes"] == peak


# -- unknown names ------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["greedy", "", "Acrobat", None])
def test_unknown_policy_is_a_name_error(policy):
    xs, refs = batch("treelstm", 2, 0)
    with pytest.raises(acrobat.AcrobatNameError) as err:
        acrobat.run(program("treelstm"), xs, policy=policy)
    for p in POLICIES:
        assert p in str(err.value)  # the hint lists the choices
    assert_outputs_equal(acrobat.run(program("treelstm"), xs).outputs, refs)


@pytest.mark.parametrize("backend", ["tpu", "", "NumPy"])
def test_unknown_backend_is_a_name_error(backend):
    xs, refs = batch("treelstm", 2, 0)
    with pytest.raises(acrobat.AcrobatNameError) as err:
        acrobat.run(program("treelstm"), xs, backend=backend)
    assert "numpy" in str(err.value)
    assert_outputs_equal(acrobat.run(program("treelstm"), xs).outputs, refs)


def test_auto_backend_falls_back_to_numpy_without_a_gpu():
    try:
        import cupy

        gpu = int(cupy.arange(3).sum()) == 3
    except Exception:  # no cupy, no driver, no device: all mean "no GPU here"
        gpu = False
    if gpu:
        pytest.skip("a usable GPU: auto may pick cupy")
    xs, refs = batch("treelstm", 3, 0)
    res = acrobat.run(program("treelstm"), xs, backend="auto")
    assert_outputs_equal(res.outputs, refs)
    assert res.stats["backend"] == "numpy"


RUNAWAY = """
H = Size("H", 4)
W: Param[H, H]

def spin(x: Tensor[H], n: int) -> Tensor[H]:
    if n > 100:
        return tanh(dense(x, W))
    return spin(x, n)

def main(x: Tensor[H], n: int) -> Tensor[H]:
    return spin(x, n)
"""


@pytest.mark.parametrize("strategy", ["batched", "direct"])
def test_a_program_that_calls_itself_forever_stops_with_a_typed_error(strategy, monkeypatch):
    import acrobat.codegen.direct as direct_gen
    import acrobat.codegen.host as host_gen

    # a self tail call is a loop; a runaway one stops after LOOP_LIMIT steps (fewer here)
    monkeypatch.setattr(host_gen, "LOOP_LIMIT", 1000)
    monkeypatch.setattr(direct_gen, "LOOP_LIMIT", 1000)
    m = acrobat.parse(RUNAWAY)
    params = acrobat.init_params(m, seed=0)
    prog = acrobat.compile(m, params)
    x = np.ones(4, np.float32)
    ok = acrobat.run(prog, [(x, 101)], strategy=strategy).outputs[0]
    assert acrobat.values_equal(ok, acrobat.evaluate(m, (x, 101), params), rtol=1e-5, atol=1e-6)
    with pytest.raises(acrobat.InstanceError, match="does not finish") as err:
        acrobat.run(prog, [(x, 101), (x, 3)], strategy=strategy)
    assert "ends the recursion" in str(err.value)
