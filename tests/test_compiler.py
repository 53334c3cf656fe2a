"""acrobat.compile / acrobat.explain: the whole pipeline on every model.

The verifier runs after every pass; every optimization can be switched off alone and
the program still computes what the reference interpreter computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.compiler import BATCHED, HOST, default_passes
from acrobat.ir.parser import parse_module
from acrobat.ir.values import values_equal
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.base import VerifyInstrument
from acrobat.passes.options import OPTIMIZATIONS, CompileOptions
from acrobat.trace import PassApplied, TaintComputed

MODELS = [(n, "tensor") for n in MODEL_NAMES + VARIANTS] + [
    ("stackrnn", "random"),
    ("drnn", "random"),
    ("berxit", "random"),
]


def load(name, decisions="tensor"):
    return acrobat.models.load(name, "tiny", decisions=decisions)


def assert_computes_the_same(spec, prog, n=3):
    for x in spec.instances(n, seed=3):
        expected = spec.evaluate(x)
        got = acrobat.evaluate(prog.module, x, prog.params)
        assert values_equal(expected, got, rtol=1e-5, atol=1e-6)


def test_pipeline_order():
    assert [p.name for p in default_passes()] == [
        "ValidatePhases", "ToANF", "InlineSmallFunctions", "EliminateDeadCode", "ReadsLast",
        "SpecializeWeights", "FoldWeightExpressions", "TabulateEmbeddings", "BatchHorizontally",
        "EliminateDeadCode",
        "FuseOps", "HoistStaticDepth", "CoarsenGrains", "HoistStaticDepth", "InferIndependence",
        "AddGhostOps",
        "EliminateDeadCode",
    ]  # fmt: skip


@pytest.mark.parametrize(("name", "decisions"), MODELS)
def test_verifier_passes_after_every_pass(name, decisions):
    spec = load(name, decisions)
    params = {k: v.copy() for k, v in spec.params.items()}
    prog = acrobat.compile(spec.module, params, instruments=[VerifyInstrument({"ToANF"})])
    assert_computes_the_same(spec, prog)
    assert parse_module(prog.module.pretty()) == prog.module
    # the inputs are not touched; derived weights only add entries
    assert prog.source_module is spec.module
    for k, v in spec.params.items():
        assert prog.params[k] is params[k] and np.array_equal(params[k], v)
    assert {p.name for p in prog.module.params} <= set(prog.params)
    assert len(prog.trace.of(PassApplied)) == len(default_passes())
    host = {f.name for f in prog.host_functions}
    assert {e.function for e in prog.trace.of(TaintComputed)} == host


@pytest.mark.parametrize("option", OPTIMIZATIONS)
@pytest.mark.parametrize("name", MODEL_NAMES + VARIANTS)
def test_each_optimization_can_be_switched_off(name, option):
    spec = load(name)
    prog = acrobat.compile(spec.module, spec.params, CompileOptions().without(option))
    assert not getattr(prog.options, option)
    assert_computes_the_same(spec, prog)


@pytest.mark.parametrize("name", MODEL_NAMES + VARIANTS)
def test_all_optimizations_off(name):
    spec = load(name)
    prog = acrobat.compile(spec.module, spec.params, CompileOptions().without(*OPTIMIZATIONS))
    assert prog.max_static_depth == -1
    assert all(len(k.groups) == 1 for k in prog.kernels.values())
    assert_computes_the_same(spec, prog)


def test_unknown_optimization_is_a_typed_error():
    with pytest.raises(acrobat.AcrobatNameError, match="unknown optimization"):
        CompileOptions().without("vectorize")


def test_kernel_specs():
    spec = load("treelstm")
    prog = acrobat.compile(spec.module, spec.params)
    leaf = prog.kernels["cell_node0"]
    assert leaf.params == (("word", acrobat.ir.types.INT, HOST),)
    # the leaf's projection and gates are rows of two tables (TabulateEmbeddings)
    assert leaf.weights == ("_tab0", "_tab1") and leaf.flops == 0
    assert len(leaf.outputs) == 2
    assert leaf.groups == ("cell_k0", "cell_k1")  # one lookup per output
    no_tables = acrobat.compile(
        spec.module, spec.params, CompileOptions().without("embedding_tables")
    )
    leaf = no_tables.kernels["cell_node0"]
    assert leaf.weights == ("E", "W_iou", "b_iou") and leaf.flops > 0
    assert leaf.groups == ("cell_k0", "cell_k1")  # embed, then the fused gate kernel
    node = prog.kernels["cell_node1"]
    assert [mode for _, _, mode in node.params] == [BATCHED] * 4
    assert node.weights == ("U", "b_U")


def test_explain_says_what_each_pass_did():
    birnn = load("birnn")
    text = acrobat.explain(birnn.module, birnn.params)
    assert "rnn -> rnn_dup1 for W_bw, U_bw, b_bw" in text  # functions cloned
    assert "rnn: 1 kernel call(s) at static depth 1" in text  # hoisted, with its depth
    assert "2 program phases" in text
    tree = load("treelstm")
    text = acrobat.explain(tree.module, tree.params)
    assert "FuseOps" in text and "4 op group(s) -> 4 distinct kernel(s)" in text  # fused
    assert "2 run(s) of kernel calls merged into one node each" in text
    assert "c, t_7: 9 ops on a row of $E -> rows of $_tab0, $_tab1 by word" in text  # tables
    assert "kernel cell_node0: 4 op(s), 1 batched arg(s), weights _tab0, _tab1, 0 flop" in text
    gru = load("nestedrnn")
    text = acrobat.explain(gru.module, gru.params)
    assert "gru: dense on one input with W_z, W_r, W_n -> $_hcat0" in text
    stack = load("stackrnn")
    text = acrobat.explain(stack.module, stack.params)
    assert "AddGhostOps" in text and "parse: branch costs [1, 0] padded by [0, 1]" in text  # ghosts
    # the arm that reads a decision restarts its depth: nothing pads the SHIFT against it
    assert "[2, 1] padded" not in text
    assert "fibers (tensor-dependent control flow): main, parse" in text


# regressions: programs that broke the pipeline.
# HOST_FROM_RESULT: CoarsenGrains moved `j = t.1 + 1` before the merged call although
# `t.1` was computed inside it (undefined variable after the pass).
# NAME_CLASH: generated names (`main_k0` from FuseOps, `cell_dup1` from SpecializeWeights)
# collided with user functions of the same name.

HOST_FROM_RESULT = """
H = Size("H", 4)
V = Size("V", 10)
E: Param[V, H]

def main(x: Tensor[H], i: int) -> Tensor[H]:
    a = tanh(x)
    t = (a, i)
    j = t[1] + 1
    return embed(E, j) + a
"""

NAME_CLASH = """
H = Size("H", 4)
W: Param[H, H]

def main(x: Tensor[H], n: int) -> Tensor[H]:
    y = dense(x, W)
    z = cell_dup1(x)
    if n > 1:
        return main_k0(y, n) + z
    return main_k0(tanh(y), n - 1)

def main_k0(x: Tensor[H], n: int) -> Tensor[H]:
    if n > 0:
        return tanh(x)
    return sigmoid(x)

def cell(x: Tensor[H], U: Tensor[H, H]) -> Tensor[H]:
    return tanh(dense(x, U))

def cell_dup1(x: Tensor[H]) -> Tensor[H]:
    return cell(x, W) + cell(x, W * 2.0)
"""


@pytest.mark.parametrize("src", [HOST_FROM_RESULT, NAME_CLASH])
def test_regressions(src):
    m = acrobat.parse(src)
    params = acrobat.init_params(m)
    options = CompileOptions(inline_max_bindings=0)
    prog = acrobat.compile(m, params, options, instruments=[VerifyInstrument({"ToANF"})])
    rng = np.random.default_rng(0)
    for n in range(4):
        x = (rng.standard_normal(4).astype(np.float32), n)
        assert values_equal(
            acrobat.evaluate(m, x, params),
            acrobat.evaluate(prog.module, x, prog.params),
            rtol=1e-5,
            atol=1e-6,
        )


def test_compile_produces_the_host_program_before_any_run():
    """Everything that does not depend on the inputs exists once compile returns, and a
    run writes nothing back into the program."""
    spec = load("treelstm")
    prog = acrobat.compile(spec.module, spec.params)
    host = prog.host_program
    assert "def make(" in host.source
    assert host.kernels == tuple(f.name for f in prog.module.functions if f.is_kernel)
    assert host.fibers == prog.taint.fiber_functions
    assert host.entry == prog.module.entry
    assert set(host.weight_values) <= set(prog.params)
    assert not hasattr(prog, "runtimes")
    before = dict(vars(prog))
    acrobat.run(prog, spec.instances(2, seed=0), trace_level="off")
    assert vars(prog) == before


def test_kernel_cuda_plans_are_made_once_and_owned_by_the_program():
    spec = load("treelstm")
    prog = acrobat.compile(spec.module, spec.params)
    for k in prog.kernels.values():
        plan = k.cuda_plan
        assert plan is k.cuda_plan  # made on first use, then kept
        assert plan.launches or plan.steps
