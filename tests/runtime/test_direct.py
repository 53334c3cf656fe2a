"""The direct strategy (each instance straight through, kernels called at once) and the
strategy switch: ``acrobat.run(..., strategy="auto" | "batched" | "direct")``."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.codegen.numpy_kernels import compile_numpy_kernel
from acrobat.ir.types import FLOAT, TensorType
from acrobat.models.data import degenerate_tree
from acrobat.runtime.direct import _one, _result
from acrobat.runtime.strategy import StrategyChooser, remeasure_at
from acrobat.runtime.values import converter
from acrobat.trace import HostProgramGenerated, RunSummary, ScheduleFormed
from tests.backends.helpers import every_op_instances, every_op_program, kernel_args
from tests.runtime.helpers import (
    FIBER_MODELS,
    MODELS,
    STATIC_MODELS,
    assert_outputs_equal,
    batch,
    program,
    shapes,
    spec,
)


def fresh(model: str):
    """A program of its own (its strategy measurements start empty)."""
    s = spec(model)
    return acrobat.compile(s.module, s.params)


# -- direct equals the interpreter and the batched path -----------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_direct_equals_the_interpreter(model):
    xs, refs = batch(model, 6, 0)
    res = acrobat.run(program(model), xs, strategy="direct")
    assert_outputs_equal(res.outputs, refs, model)
    assert res.stats.strategy == "direct"
    batched = acrobat.run(program(model), xs, strategy="batched")
    assert batched.stats.strategy == "batched"
    # the same kernel calls: one DFG node each
    assert res.stats.nodes == res.stats.launches == batched.stats.nodes
    assert res.stats.mean_batch == (1.0 if res.stats.nodes else 0.0)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("off", ["taint_specialization", "fusion"])
def test_direct_equals_the_interpreter_without(model, off):
    """Weights passed as values (no taint specialization: ``dense``/``embed`` by value)
    and one op per kernel (no fusion) run per instance too."""
    xs, refs = batch(model, 3, 1)
    res = acrobat.run(program(model, (off,)), xs, strategy="direct")
    assert_outputs_equal(res.outputs, refs, f"{model} without {off}")


def test_direct_every_op():
    """The ops and operand layouts no model uses, in the per-instance kernels."""
    prog = every_op_program()[0]
    xs, refs = every_op_instances(4, 0)
    assert_outputs_equal(acrobat.run(prog, xs, strategy="direct").outputs, refs, "every op")


@pytest.mark.parametrize("model", MODELS)
def test_per_instance_kernels_equal_the_batched_kernels(model):
    """Every kernel's per-instance flavour gives instance ``i``'s row of the batched
    kernel's results: same shapes, dtypes and values (host ints and float bits as the
    batched records carry them, plain ints and floats per instance)."""
    prog = program(model)
    B = 4
    for n, kernel in enumerate(prog.kernels.values()):
        batched = compile_numpy_kernel(kernel.function, prog.params, False).fn
        one = compile_numpy_kernel(kernel.function, prog.params, per_instance=True).fn
        args = kernel_args(kernel, B, n).gathered
        outs = batched(B, *args)
        for i in range(B):
            mine = []
            for (_, ty, _), a in zip(kernel.params, args):
                if isinstance(ty, TensorType):
                    mine.append(a[i])
                else:
                    mine.append(float(a.view(np.float64)[i]) if ty == FLOAT else int(a[i]))
            got = one(*mine)
            got = got if isinstance(got, tuple) else (got,)
            assert len(got) == len(outs)
            for g, o in zip(got, outs):
                g = np.asarray(g)
                assert g.shape == o[i].shape and g.dtype == o[i].dtype, kernel.name
                np.testing.assert_allclose(g, o[i], rtol=1e-5, atol=1e-6, err_msg=kernel.name)


def test_converter_plans_once_and_shares_what_holds_no_tensor():
    """The direct strategy's value walk: lists of any length without recursion, trees,
    tuples; results copied when kept (inputs, weights), tensor-free parts shared."""
    m = acrobat.parse(CONVERT_SRC)
    xs = [np.full(2, i, np.float32) for i in range(5000)]
    long = acrobat.AdtValue("PNil", ())
    for i in reversed(range(5000)):
        long = acrobat.AdtValue("PCons", ((xs[i], i), long))
    kept = {id(x) for x in xs[:2500]}  # e.g. inputs: copied; the others are handed over
    out, got = converter(m, m.main.params[0].ty, _result(kept))(long), []
    while out.ctor == "PCons":
        got.append(out.fields[0])
        out = out.fields[1]
    assert len(got) == 5000 and all(g[1] == i for i, g in enumerate(got))
    assert all(g[0] is not x and np.array_equal(g[0], x) for g, x in zip(got, xs[:2500]))
    assert all(g[0] is x for g, x in zip(got[2500:], xs[2500:]))
    assert converter(m, m.main.params[1].ty, _result(set())) is None  # no tensor inside
    leaf = acrobat.AdtValue("Leaf", (7,))
    tree = acrobat.AdtValue("Node", (acrobat.AdtValue("Tip", (xs[1],)), leaf))
    tcopy = converter(m, m.main.params[2].ty, _result({id(xs[1])}))(tree)
    assert tcopy.fields[1] is leaf  # holds no tensor: shared
    assert tcopy.fields[0].fields[0] is not xs[1]
    same = converter(m, m.main.params[2].ty, _one(set()))(tree)
    assert same is tree  # inputs that are plain arrays pass as they are


ALIAS_SRC = """
H = Size("H", 3)
W: Param[H]

def main(x: Tensor[H]) -> tuple[Tensor[H], Tensor[H], Tensor[H], Tensor[H], Tensor[H]]:
    y = tanh(x)
    return x, W, y, y, W * x
"""


def test_direct_results_never_alias_inputs_weights_or_each_other():
    """A kernel's fresh array is handed over as it is, once; an input or a weight passed
    through, or one array in two places of a result, is copied."""
    m = acrobat.parse(ALIAS_SRC)
    p = acrobat.init_params(m, 0)
    xs = [np.arange(3, dtype=np.float32) + i for i in range(3)]
    for strategy in ("direct", "batched"):
        outs = acrobat.run(acrobat.compile(m, p), xs, strategy=strategy).outputs
        for x, out in zip(xs, outs):
            arrays = list(out) + [x, p["W"]]
            for i, a in enumerate(arrays):
                assert all(not np.shares_memory(a, b) for b in arrays[i + 1 :]), strategy
            assert_outputs_equal([out], [acrobat.evaluate(m, x, p)])


CONVERT_SRC = """
class Pairs(ADT):
    PNil: ()
    PCons: (tuple[Tensor[2], int], Pairs)

class Ints(ADT):
    INil: ()
    ICons: (int, Ints)

class T(ADT):
    Tip: Tensor[2]
    Leaf: int
    Node: (T, T)

def main(p: Pairs, i: Ints, t: T) -> Tensor[2]:
    return zeros(shape=2)
"""


@pytest.mark.parametrize("model", MODELS)
def test_direct_results_are_the_users_arrays(model):
    """Results are arrays of their own, of the declared dtype; a second run leaves the
    first run's results alone (the direct kernels keep no workspace)."""
    xs, refs = batch(model, 3, 1)
    first = acrobat.run(program(model), xs, strategy="direct").outputs
    acrobat.run(program(model), batch(model, 3, 2)[0], strategy="direct")
    assert_outputs_equal(first, refs, model)


@pytest.mark.parametrize("model", STATIC_MODELS)
def test_direct_on_the_null_backend_keeps_shapes(model):
    xs, _ = batch(model, 3, 0)
    numpy = acrobat.run(program(model), xs, strategy="direct")
    null = acrobat.run(program(model), xs, backend="null", strategy="direct")
    assert [shapes(y) for y in null.outputs] == [shapes(y) for y in numpy.outputs]
    assert null.stats.launches == numpy.stats.launches


def test_direct_runs_deep_inputs():
    deep = degenerate_tree(3000, lambda i: i % 50)
    xs, refs = batch("treelstm", 2, 0)
    res = acrobat.run(program("treelstm"), [xs[0], deep, xs[1]], strategy="direct")
    assert_outputs_equal(res.outputs, [refs[0], spec("treelstm").evaluate(deep), refs[1]])


def test_direct_empty_batch():
    res = acrobat.run(program("birnn"), [], strategy="direct")
    assert res.outputs == [] and res.stats.launches == 0 and res.stats.mean_batch == 0.0


def test_direct_program_is_generated_at_compile_time():
    prog = program("stackrnn")
    src = prog.direct_program.source
    assert "yield" not in src  # fiber functions are plain functions: reads are immediate
    assert "def make(" in src
    assert prog.direct_program.kernels == prog.host_program.kernels
    # parse calls itself in tail position: a loop, not a frame per transition
    parse = src[src.index("def f_parse(") : src.index("def f_main(")]
    assert "for _ in range(" in parse and "f_parse(" not in parse[len("def f_parse(") :]


def test_direct_trace_says_which_ran():
    xs, _ = batch("birnn", 3, 0)
    res = acrobat.run(program("birnn"), xs, strategy="direct")
    summary = res.trace.of(RunSummary)[-1].stats
    assert summary["strategy"] == "direct"
    assert "asked for" in summary["strategy_reason"]
    # the summary is the run's whole statistics, BLAS thread facts included
    assert summary == dict(res.stats) and summary["threads"]
    assert "= K0(" in res.trace.of(HostProgramGenerated)[0].source
    assert not res.trace.of(ScheduleFormed)
    off = acrobat.run(program("birnn"), xs, strategy="direct", trace_level="off")
    assert len(off.trace) == 0


# -- bad instances: the same typed errors --------------------------------------------------


@pytest.mark.parametrize("word", [-1, 50, 10**6])
def test_direct_out_of_vocabulary_word_names_the_instance(word):
    xs, _ = batch("treelstm", 3, 0)
    bad = acrobat.AdtValue("Node", (xs[1], acrobat.AdtValue("Leaf", (word,))))
    for strategy in ("batched", "direct"):
        with pytest.raises(acrobat.InstanceError) as err:
            acrobat.run(program("treelstm"), [xs[0], bad, xs[2]], strategy=strategy)
        assert err.value.index == 1
        assert "embedding id" in str(err.value)


def test_direct_host_int_beyond_int64_names_the_instance():
    xs, _ = batch("treelstm", 3, 0)
    bad = acrobat.AdtValue("Leaf", (1 << 70,))
    for strategy in ("batched", "direct"):
        with pytest.raises(acrobat.InstanceError) as err:
            acrobat.run(program("treelstm"), [xs[0], xs[1], bad], strategy=strategy)
        assert err.value.index == 2
        assert "64 bits" in str(err.value)


HOST_SRC = """
H = Size("H", 3)
W: Param[H, H]

class Item(ADT):
    It: (Tensor[H], float, int)

def main(t: Item) -> Tensor[H]:
    match t:
        case It(x, s, n):
            return tanh(dense(x * s, W)) / (10 // n) - s
"""


def _host_program():
    m = acrobat.parse(HOST_SRC)
    p = acrobat.init_params(m, 0)
    return m, p, acrobat.compile(m, p)


def _item(s: float, n: int):
    return acrobat.AdtValue("It", (np.arange(3, dtype=np.float32) - 1, s, n))


def test_direct_host_floats_and_ints_in_kernels():
    """Host floats reach kernels as float64 bits, ints as int64, in both strategies."""
    m, p, prog = _host_program()
    xs = [_item(0.25 * i - 1, i + 1) for i in range(5)] + [_item(1e20, 3)]
    refs = [acrobat.evaluate(m, x, p) for x in xs]
    for strategy in ("batched", "direct"):
        out = acrobat.run(prog, xs, strategy=strategy).outputs
        assert_outputs_equal(out, refs, strategy)
        assert all(o.dtype == np.float32 for o in out)


@pytest.mark.parametrize("strategy", ["batched", "direct"])
def test_direct_host_arithmetic_failure_names_the_instance(strategy):
    _, _, prog = _host_program()
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(prog, [_item(1.0, 1), _item(1.0, 2), _item(1.0, 0)], strategy=strategy)
    assert err.value.index == 2
    assert "host arithmetic failed" in str(err.value)


@pytest.mark.parametrize("model", FIBER_MODELS)
def test_direct_wrong_type_in_a_fiber_program(model):
    xs, refs = batch(model, 3, 0)
    with pytest.raises(acrobat.InstanceError) as err:
        acrobat.run(program(model), [xs[0], xs[1], "not an instance"], strategy="direct")
    assert err.value.index == 2
    assert_outputs_equal(acrobat.run(program(model), xs, strategy="direct").outputs, refs)


def test_unknown_strategy_is_a_typed_error():
    with pytest.raises(acrobat.AcrobatNameError, match="strategy"):
        acrobat.run(program("birnn"), batch("birnn", 2, 0)[0], strategy="fastest")


def test_direct_needs_a_host_backend(monkeypatch):
    import acrobat.runtime.run as run_module
    from acrobat.backends.null_backend import NullBackend

    class DeviceBackend(NullBackend):
        name = "device"

    monkeypatch.setattr(run_module, "get_backend", lambda name: DeviceBackend())
    runtime = run_module.Runtime(program("birnn"), "device")
    xs = batch("birnn", 2, 0)[0]
    for _ in range(4):  # auto never tries direct there
        assert runtime.run(xs, "acrobat", "off", None).stats.strategy == "batched"
    with pytest.raises(acrobat.AcrobatNameError, match="direct"):
        runtime.run(xs, "acrobat", "off", None, "direct")


# -- the strategy switch ------------------------------------------------------------------


def test_auto_measures_both_then_runs_the_faster():
    prog = fresh("birnn")
    xs, refs = batch("birnn", 8, 0)
    seen = []
    for _ in range(8):
        res = acrobat.run(prog, xs, trace_level="off")
        assert_outputs_equal(res.outputs, refs)
        seen.append((res.stats.strategy, res.stats.strategy_reason))
    assert [s for s, _ in seen[:5]] == ["batched", "batched", "direct", "batched", "direct"]
    assert "warm-up" in seen[0][1]
    assert "measuring batched at batch sizes 8-15 (run 1 of 2" in seen[1][1]
    assert "measuring direct at batch sizes 8-15 (run 2 of 2" in seen[4][1]
    assert all("per kernel call vs" in why for _, why in seen[5:])
    # another batch-size range is measured on its own
    res = acrobat.run(prog, xs[:2], trace_level="off")
    assert res.stats.strategy == "batched"
    assert "batch sizes 2-3" in res.stats.strategy_reason


@pytest.mark.parametrize("policy", ["dynet-depth", "dynet-agenda", "eager"])
def test_auto_keeps_other_policies_batched(policy):
    prog = fresh("birnn")
    xs, _ = batch("birnn", 4, 0)
    for _ in range(4):
        res = acrobat.run(prog, xs, policy=policy)
        assert res.stats.strategy == "batched"
        assert policy in res.stats.strategy_reason


def test_auto_stays_batched_when_the_batched_path_is_asked_for():
    prog = fresh("birnn")
    xs, _ = batch("birnn", 4, 0)
    for _ in range(4):
        assert acrobat.run(prog, xs, memory_limit=1 << 30).stats.strategy == "batched"
        assert acrobat.run(prog, xs, trace_level="nodes").stats.strategy == "batched"
        assert acrobat.run(prog, xs, trace_level="batches").stats.strategy == "batched"
        assert acrobat.run(prog, xs, backend="null").stats.strategy == "batched"
    res = acrobat.run(prog, xs, memory_limit=1 << 30)
    assert "memory_limit" in res.stats.strategy_reason


def test_forcing_either_strategy():
    prog = fresh("treelstm")
    xs, refs = batch("treelstm", 4, 0)
    for strategy in ("direct", "batched", "direct"):
        res = acrobat.run(prog, xs, strategy=strategy)
        assert res.stats.strategy == strategy
        assert res.stats.strategy_reason == f"strategy={strategy!r} was asked for"
        assert res.trace.of(RunSummary)[-1].stats["strategy"] == strategy
        assert_outputs_equal(res.outputs, refs)


class FakeRuns:
    """A chooser driven by made-up costs (ms per run of 100 kernel calls): no clock."""

    ARGS = ("acrobat", "numpy", "off", None)

    def __init__(self):
        self.c = StrategyChooser()

    def step(self, ms: dict, n: int = 8, strategy: str = "auto"):
        how, why, group = self.c.choose(strategy, *self.ARGS, n)
        self.c.observe(group, how, ms[how], 100)
        return how, why

    def steps(self, ms: dict, k: int) -> list[str]:
        return [self.step(ms)[0] for _ in range(k)]


def test_chooser_measures_each_twice_then_runs_the_cheaper():
    f = FakeRuns()
    times = {"batched": 2.0, "direct": 1.0}
    assert f.step(times)[0] == "batched"  # warm-up
    assert f.steps(times, 4) == ["batched", "direct", "batched", "direct"]
    how, why = f.step(times)
    assert how == "direct"
    assert why == (
        "auto: direct took 10.0 us per kernel call vs 20.0 for batched at batch sizes 8-15 "
        "(best of the last 3 measured runs of each)"
    )
    # other ranges are measured apart; traced runs stay batched
    assert "measuring batched" in f.c.choose("auto", *FakeRuns.ARGS, 16)[1]
    traced = f.c.choose("auto", "acrobat", "numpy", "batches", None, 8)
    assert traced[0] == "batched" and "untraced" in traced[1]
    assert "at batch size 1 (" in f.c.choose("auto", *FakeRuns.ARGS, 1)[1]


def test_one_slow_run_does_not_decide():
    """A cold first direct run (5x slower) is outweighed by its second run."""
    f = FakeRuns()
    f.step({"batched": 2.0, "direct": 1.0})
    f.step({"batched": 2.0, "direct": 1.0})  # batched
    f.step({"batched": 2.0, "direct": 10.0})  # direct, cold
    assert f.steps({"batched": 2.0, "direct": 1.0}, 2) == ["batched", "direct"]
    assert f.step({"batched": 2.0, "direct": 1.0})[0] == "direct"


def test_the_loser_is_re_measured_at_powers_of_two():
    f = FakeRuns()
    times = {"batched": 2.0, "direct": 1.0}
    f.steps(times, 5)  # warm-up and two runs of each
    ran = f.steps(times, 64)
    losers = [i + 1 for i, how in enumerate(ran) if how == "batched"]
    assert losers == [16, 32, 64]  # the n-th run since the choice
    assert [n for n in range(1, 2000) if remeasure_at(n)][-4:] == [1024, 1280, 1536, 1792]
    f.c.choose("auto", *FakeRuns.ARGS, 8)  # choose alone changes nothing
    how, why = f.c.choose("auto", *FakeRuns.ARGS, 8)[:2]
    assert how == "direct"


def test_a_far_loser_is_re_measured_rarely():
    f = FakeRuns()
    times = {"batched": 1.0, "direct": 4.0}  # direct 4x the cost: more than FAR
    f.steps(times, 5)
    ran = f.steps(times, 600)
    assert [i + 1 for i, how in enumerate(ran) if how == "direct"] == [256, 512]
    assert remeasure_at(16) and not remeasure_at(16, far=True) and remeasure_at(512, far=True)
    assert not any(remeasure_at(n) for n in range(1, 16))  # none among the first runs
    # 2.5x is far too: a re-measure of it costs more than a winning run
    g = FakeRuns()
    g.steps({"batched": 1.0, "direct": 2.5}, 5)
    ran = g.steps({"batched": 1.0, "direct": 2.5}, 300)
    assert [i + 1 for i, how in enumerate(ran) if how == "direct"] == [256]


def test_a_changed_load_flips_the_choice_both_ways():
    f = FakeRuns()
    f.steps({"batched": 2.0, "direct": 1.0}, 5)
    assert f.steps({"batched": 2.0, "direct": 1.0}, 2) == ["direct", "direct"]
    # the winner slows down for good: once its last runs all cost more than the loser's
    # (the window holds none of its fast ones), the loser is re-measured at once (DOUBT),
    # is faster, and runs from then on
    slow = {"batched": 2.0, "direct": 3.0}
    assert f.steps(slow, 4) == ["direct"] * 3 + ["batched"]
    assert f.steps(slow, 14) == ["batched"] * 14
    # the loser speeds up: seen when it is re-measured (the 16th run since the choice)
    fast = {"batched": 2.0, "direct": 0.5}
    assert f.c.groups[8].since == 14
    assert f.step(fast)[0] == "batched"
    how, why = f.step(fast)
    assert how == "direct" and why.startswith("auto: re-measuring direct (run 16 since the")
    assert f.steps(fast, 2) == ["direct", "direct"]
    assert f.step(fast)[1].startswith("auto: direct took 5.0 us per kernel call vs 20.0")


def test_a_choice_made_on_lucky_runs_is_doubted_at_once():
    """Direct won the settling runs by luck (two fast ones); its runs since then cost 10%
    more than batched's: batched is re-measured at the next run (once), is faster, and
    runs from then on, with the reason saying why it ran. A loser that is slower now too
    keeps the choice, and is not re-measured again before the 16th run."""
    f = FakeRuns()
    f.step({"batched": 2.0, "direct": 1.9})  # warm-up
    f.steps({"batched": 2.0, "direct": 1.9}, 4)  # settling: direct by luck
    real = {"batched": 2.0, "direct": 2.2}
    how, why = f.step(real)
    assert how == "direct"
    how, why = f.step(real)
    assert how == "batched" and why.startswith(
        "auto: re-measuring batched (direct's runs since the choice cost more than batched's"
    )
    # batched stays the choice; direct runs at most twice in 20: once doubted (its lucky
    # settling runs are still its best, so batched's runs look dear beside them: one
    # re-measure per choice) and at the 16th run since the choice
    ran = f.steps(real, 20)
    assert ran.count("direct") <= 2 and f.c.groups[8].choice == "batched"
    assert ran[:1] == ["batched"] and ran[-3:] == ["batched"] * 3
    g = FakeRuns()
    g.step({"batched": 2.0, "direct": 1.9})
    g.steps({"batched": 2.0, "direct": 1.9}, 4)
    slower = {"batched": 2.6, "direct": 2.2}  # both slower: direct still the faster
    ran = g.steps(slower, 15)
    assert [i + 1 for i, how in enumerate(ran) if how == "batched"] == [2]


def test_forced_runs_count_in_their_group():
    f = FakeRuns()
    times = {"batched": 2.0, "direct": 1.0}
    f.steps(times, 5)
    assert f.step(times)[0] == "direct"
    for _ in range(3):  # forced batched runs, now faster than direct
        f.step({"batched": 0.5, "direct": 1.0}, strategy="batched")
    how, why = f.step(times)
    assert how == "batched" and why.startswith("auto: batched took 5.0 us")


def test_a_machine_slowing_down_does_not_hand_the_choice_to_the_stale_loser():
    """Both strategies get 1.4x slower: the loser's old fast runs must not beat the
    winner's slow recent ones (the loser's re-measure stands alone for it)."""
    f = FakeRuns()
    f.steps({"batched": 3.0, "direct": 3.9}, 5)  # warm-up, two of each: batched wins
    slow = {"batched": 4.2, "direct": 5.46}
    ran = f.steps(slow, 32)
    # once at once (the winner's runs since the choice cost more than the loser's old
    # ones: DOUBT), then at the 16th and 32nd runs since the choice
    assert [i + 1 for i, how in enumerate(ran) if how == "direct"] == [2, 16, 32]
    assert f.step(slow)[0] == "batched"
