"""InferIndependence, the independence analysis, host-only costs and the parallel check."""

import numpy as np
import pytest

import acrobat
from acrobat import models
from acrobat.analysis.branch_costs import BranchCosts, host_only
from acrobat.analysis.independence import block_deps, independent_steps
from acrobat.ir.nodes import Let
from acrobat.ir.traversal import walk
from acrobat.passes.options import CompileOptions

CHAIN = """
H = Size("H", 4)
W: Param[H, H]

def f(x: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x, W))

def g(x: Tensor[H]) -> Tensor[H]:
    return sigmoid(dense(x, W))

def app(xs: List[int], y: int) -> List[int]:
    match xs:
        case Nil():
            return Cons(y, Nil())
        case Cons(z, rest):
            return Cons(z, app(rest, y))

def main(x: Tensor[H], n: int) -> Tensor[H]:
    a = f(x)
    b = g(x)
    if n > 0:
        ys = app(Cons(1, Nil()), n)
        return a + b
    return f(a) + b
"""


def test_childsum_sums_start_together():
    spec = models.load("treelstm_childsum", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    pairs = prog.independent["cell"]
    assert pairs  # sum_h(kids) and map(forget, ...) start at one depth
    off = acrobat.compile(spec.module, spec.params, CompileOptions(independence=False))
    assert off.independent == {}
    xs = spec.instances(8)
    keys = CompileOptions().without("leveling")
    on = acrobat.compile(spec.module, spec.params, keys)
    off = acrobat.compile(spec.module, spec.params, keys.without("independence"))
    on_l = acrobat.run(on, xs, strategy="batched").stats["launches"]
    off_l = acrobat.run(off, xs, strategy="batched").stats["launches"]
    assert on_l < off_l
    # with run-time leveling (the default) acrobat needs fewer launches than both DyNet
    # policies here
    lev_l = acrobat.run(prog, xs, strategy="batched").stats["launches"]
    assert lev_l < on_l
    for policy in ("dynet-depth", "dynet-agenda"):
        assert lev_l <= acrobat.run(prog, xs, policy=policy).stats["launches"]


def test_barriers_keep_program_order():
    spec = models.load("stackrnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    fibers = prog.taint.fiber_functions
    for f in prog.host_functions:
        for e in walk(f.body):
            if isinstance(e, Let):
                for d in block_deps(e, fibers):
                    if d.barrier:
                        assert d.deps == tuple(range(d.index))


def test_independent_calls_and_host_only_costs():
    m = acrobat.parse(CHAIN)
    assert "app" in host_only(m)
    main = m.function_map["main"]
    lets = [e for e in walk(main.body) if isinstance(e, Let)]
    assert any(("a", "b") in independent_steps(e, frozenset()) for e in lets)
    costs = BranchCosts(m)
    assert costs.function("app") == 0  # records no kernel, though recursive


def test_a_call_inside_a_parallel_arm_belongs_to_that_arm():
    # arms cannot name each other's results, so they never depend on each other; a call in
    # an arm's arguments runs first, as part of that arm (found by the fuzzer: valid code)
    src = CHAIN.replace("    a = f(x)\n    b = g(x)\n", "    a, b = parallel(f(x), g(f(x)))\n")
    m = acrobat.parse(src)
    seq = acrobat.parse(
        CHAIN.replace("    a = f(x)\n    b = g(x)\n", "    a = f(x)\n    b = g(f(x))\n")
    )
    params = acrobat.init_params(m, seed=0)
    xs = [(np.full(4, 0.5, np.float32), n) for n in (0, 2)]
    for strategy in ("batched", "direct"):
        res = acrobat.run(acrobat.compile(m, params), xs, strategy=strategy)
        for x, y in zip(xs, res.outputs):
            want = acrobat.evaluate(seq, x, params)
            assert acrobat.values_equal(acrobat.evaluate(m, x, params), want)
            assert acrobat.values_equal(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["treelstm_childsum", "stackrnn", "drnn", "birnn"])
@pytest.mark.parametrize(
    "options",
    [
        CompileOptions(),
        CompileOptions().without("independence"),
        CompileOptions().without("leveling"),
        CompileOptions().without("independence", "leveling"),
        CompileOptions().without("ghost_ops"),
    ],
    ids=[
        "default",
        "no-independence",
        "no-leveling",
        "no-leveling-no-independence",
        "no-ghost_ops",
    ],
)
def test_same_values_with_and_without(name, options):
    spec = models.load(name, "tiny")
    prog = acrobat.compile(spec.module, spec.params, options)
    xs = spec.instances(6, seed=3)
    res = acrobat.run(prog, xs, strategy="batched")
    for x, y in zip(xs, res.outputs):
        ref = spec.evaluate(x)
        _close(y, ref)


def _close(a, b):
    import numpy as np

    from acrobat.ir.values import to_list

    if isinstance(a, tuple):
        for x, y in zip(a, b):
            _close(x, y)
    elif hasattr(a, "ctor"):
        for x, y in zip(to_list(a), to_list(b)):
            _close(x, y)
    elif isinstance(a, (int, float)):
        assert a == pytest.approx(b, rel=1e-4, abs=1e-5)
    else:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
