"""Taint analyses on every model: weights, per-instance values, tensor-dependent control."""

from __future__ import annotations

import pytest

import acrobat
from acrobat.analysis.taint import (
    INSTANCE,
    PARAMETER,
    TENSOR_DEPENDENT,
    model_parameter_taint,
    taint,
)
from acrobat.ir.nodes import Let, OpCall
from acrobat.ir.traversal import walk
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.anf import ToANF
from tests.passes.helpers import run

ALL = [(n, "tensor") for n in MODEL_NAMES + VARIANTS] + [("stackrnn", "random")]

# functions that reach a tensor-dependent decision, so run in fibers (source module)
FIBERS = {
    ("drnn", "tensor"): {"expand", "first_child", "next_sibling", "main"},
    ("berxit", "tensor"): {"confident", "encoder", "main"},
    ("stackrnn", "tensor"): {"parse", "main"},
}

# functions analysed in more than one weight context (MPTA), with the count
SPECIALIZED = {
    "birnn": {"rnn": 2, "cell": 2},
    "berxit": {"encoder_layer": 6, "attention": 6, "confident": 5},
}


def load(name, decisions="tensor"):
    return acrobat.models.load(name, "tiny", decisions=decisions)


def anf(spec):
    return run([ToANF()], spec.module, spec.params)[0]


def bound_to(m, fn, op):
    """Names of the variables of ``fn`` bound to a call of ``op``."""
    return [
        b.var.name
        for e in walk(m.function_map[fn].body)
        if isinstance(e, Let)
        for b in e.bindings
        if isinstance(b.value, OpCall) and b.value.op == op
    ]


@pytest.mark.parametrize(("name", "decisions"), ALL)
def test_every_model(name, decisions):
    spec = load(name, decisions)
    t = taint(anf(spec))
    expected = FIBERS.get((name, decisions), set())
    assert set(t.fiber_functions) == expected
    assert {f for f, _ in t.tensor_dependent_branches} <= expected
    assert bool(t.tensor_dependent_branches) == bool(expected)
    # the entry's inputs are per instance
    assert all(t.of(spec.module.entry, p.name) != PARAMETER for p in spec.module.main.params)
    assert t.returns[spec.module.entry] == (TENSOR_DEPENDENT if expected else INSTANCE)
    assert model_parameter_taint(spec.module).specialized() == SPECIALIZED.get(name, {})


def test_treelstm_weights_and_leaf_embedding():
    spec = load("treelstm")
    m = anf(spec)
    t = taint(m)
    (emb,) = bound_to(m, "cell", "embed")
    assert t.of("cell", emb) == INSTANCE
    assert t.of("cell", "word") == INSTANCE
    # no weight is ever passed around: one context per function, no weight parameters
    assert model_parameter_taint(spec.module).contexts == {"main": [(None,)], "cell": [(None,)]}
    # (embedding tables off: they replace the leaf's weights by tables derived from them)
    no_tables = acrobat.CompileOptions().without("embedding_tables")
    prog = acrobat.compile(spec.module, spec.params, no_tables)
    # every weight is read in place by a kernel (reused across the batch), never batched
    assert {w for k in prog.kernels.values() for w in k.weights} == set(spec.params)
    for k in prog.kernels.values():
        assert all(prog.taint.of(k.name, p) == INSTANCE for p, _, _ in k.params)
    leaf = next(k for k in prog.kernels.values() if "E" in k.weights)
    assert prog.taint.of(leaf.name, bound_to(prog.module, leaf.name, "embed")[0]) == INSTANCE


def test_weight_parameters_and_weight_only_values_are_parameters():
    spec = load("birnn")
    t = taint(spec.module)
    for p in ("W", "U", "b"):
        assert t.of("cell", p) == PARAMETER and t.of("rnn", p) == PARAMETER
    assert t.of("cell", "x") == INSTANCE and t.of("rnn", "h") == INSTANCE
    src = """
H = Size("H", 4)
W: Param[H, H]
U: Param[H, H]

def main(x: Tensor[H]) -> Tensor[H]:
    M = W + U * 0.5
    y = dense(x, M)
    return y
"""
    t = taint(acrobat.parse(src))
    assert t.of("main", "M") == PARAMETER and t.of("main", "y") == INSTANCE


def test_drnn_stop_decisions_are_tensor_dependent():
    t = taint(anf(load("drnn")))
    for v in ("has_children", "has_next_sibling"):
        assert t.of("expand", v) == TENSOR_DEPENDENT
        assert ("expand", v) in t.tensor_dependent_branches
    assert t.of("expand", "h") == INSTANCE  # the state itself is an ordinary tensor


def test_berxit_exit_decisions_are_tensor_dependent():
    spec = load("berxit")
    t = taint(anf(spec))
    assert [f for f, _ in t.tensor_dependent_branches] == ["encoder"] * 5
    for _, cond in t.tensor_dependent_branches:
        assert t.of("encoder", cond) == TENSOR_DEPENDENT
    assert t.returns["confident"] == TENSOR_DEPENDENT
    # the compiled program inlines `confident`; the encoder and main still need fibers
    prog = acrobat.compile(spec.module, spec.params)
    assert set(prog.taint.fiber_functions) == {"encoder", "main"}


def test_stackrnn_fibers_only_in_tensor_mode():
    tensor = acrobat.compile(load("stackrnn").module, load("stackrnn").params)
    random = load("stackrnn", "random")
    assert set(tensor.taint.fiber_functions) == {"parse", "main"}
    assert set(acrobat.compile(random.module, random.params).taint.fiber_functions) == set()


def test_birnn_rnn_is_specialized_into_two():
    spec = load("birnn")
    contexts = model_parameter_taint(spec.module).contexts["rnn"]
    assert contexts == [
        (None, None, "W_fw", "U_fw", "b_fw"),
        (None, None, "W_bw", "U_bw", "b_bw"),
    ]
    prog = acrobat.compile(spec.module, spec.params)
    names = {f.name for f in prog.host_functions}
    assert {"rnn", "rnn_dup1"} <= names and "rnn_dup2" not in names
    reads = {fn: set() for fn in ("rnn", "rnn_dup1")}
    for fn in reads:
        for e in walk(prog.module.function_map[fn].body):
            if hasattr(e, "kernel"):
                reads[fn] |= set(prog.kernels[e.kernel].weights)
    assert reads == {"rnn": {"W_fw", "U_fw", "b_fw"}, "rnn_dup1": {"W_bw", "U_bw", "b_bw"}}


def test_berxit_six_encoder_layers():
    spec = load("berxit")
    prog = acrobat.compile(spec.module, spec.params)
    names = {f.name for f in prog.host_functions}
    layers = ["encoder_layer"] + [f"encoder_layer_dup{k}" for k in range(1, 6)]
    assert set(layers) <= names and "encoder_layer_dup6" not in names
    for n, fn in enumerate(layers, start=1):
        kernels = [
            e.kernel for e in walk(prog.module.function_map[fn].body) if hasattr(e, "kernel")
        ]
        weights = {w for k in kernels for w in prog.kernels[k].weights}
        assert weights == {
            f"{w}_{n}" for w in ("g_att", "be_att", "W_1", "b_1", "W_2", "b_2", "g_ffn", "be_ffn")
        }
    text = acrobat.explain(spec.module, spec.params)
    assert "encoder_layer -> encoder_layer_dup5 for W_qkv_6" in text


def test_stackrnn_depth_follows_the_parse_so_it_is_tensor_dependent():
    """``depth`` is built from constants (0, +1, -1), but which call passed it is decided by
    the tokens and by the item() decision: control flow makes it tensor-dependent."""
    for prog in (anf(load("stackrnn")), acrobat.compile(*_module_params("stackrnn")).module):
        t = taint(prog)
        assert t.of("parse", "depth") == TENSOR_DEPENDENT
        assert t.of("parse", "stack") == TENSOR_DEPENDENT  # its shape follows the decisions
    # fibers and the branches that need them are by data: control adds none
    assert set(t.fiber_functions) == {"parse", "main"}


def test_drnn_depth_and_width_counters_are_tensor_dependent():
    t = taint(anf(load("drnn")))
    for fn in ("expand", "first_child", "next_sibling"):
        assert t.of(fn, "depth") == TENSOR_DEPENDENT
    assert t.of("expand", "width") == TENSOR_DEPENDENT


def _module_params(name):
    spec = load(name)
    return spec.module, spec.params


COUNTER = """
H = Size("H", 4)
W: Param[H, H]

def walk(xs: List[int], n: int, k: int, w: Tensor[H, H]) -> int:
    match xs:
        case Nil():
            return n + k
        case Cons(x, rest):
            if x > 0:
                return walk(rest, n + 1, k, w)
            return walk(rest, n, k, w)

def main(xs: List[int]) -> int:
    return walk(xs, 0, 7, W)
"""


def test_control_flow_counts_only_where_it_picks_the_value():
    t = taint(acrobat.parse(COUNTER))
    assert t.of("walk", "n") == INSTANCE  # n + 1 or n: the instance's list decides
    assert t.of("walk", "k") == PARAMETER  # 7, then passed on unchanged: always 7
    assert t.of("walk", "w") == PARAMETER  # the weight W, passed on unchanged
    assert t.tensor_dependent_branches == [] and not t.fiber_functions


LOOP = """
H = Size("H", 4)
w: Param[1, H]

def steps(h: Tensor[H], n: int) -> Tensor[H]:
    if n == 0:
        return h
    if item(dense(h, w)) > 0.5:
        return h
    return steps(tanh(h), n - 1)

def main(x: Tensor[H]) -> Tensor[H]:
    return steps(x, 6)
"""

CALLERS = """
def f(x: int) -> int:
    return x + 1

def one(y: int) -> int:
    return f(1)

def two(y: int) -> int:
    return f(2)

def main(c: int) -> int:
    if c > 0:
        return one(c)
    return two(c)
"""


def test_a_loop_counter_stays_a_parameter_but_a_value_picked_by_the_caller_does_not():
    t = taint(acrobat.parse(LOOP))
    # the k-th step's n is 6 - k in every instance; only how many steps run differs
    assert t.of("steps", "n") == PARAMETER and t.of("steps", "h") == INSTANCE
    assert [f for f, _ in t.tensor_dependent_branches] == ["steps"]
    t = taint(acrobat.parse(CALLERS))
    assert t.of("f", "x") == INSTANCE  # 1 or 2: c decides which caller runs
