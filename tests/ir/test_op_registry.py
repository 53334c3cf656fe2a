"""The op registry is each op's one home: every op that can reach a kernel has a NumPy and
a CUDA rule, a missing rule is a typed error naming the op, FLOP rules give the numbers
the old ``compiler.op_flops`` gave, and the frontend's positional attributes come from it."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import acrobat
from acrobat.codegen import missing_rule
from acrobat.codegen.cuda_kernels import CUDA_RULES, Lowering, plan_kernel
from acrobat.codegen.numpy_kernels import NUMPY_RULES, compile_numpy_kernel
from acrobat.compiler import op_flops
from acrobat.errors import MissingLoweringError
from acrobat.ir.list_ops import LIST_REDUCTIONS
from acrobat.ir.nodes import OpCall
from acrobat.ir.ops import REGISTRY, OpKind, register, same_type_rule, unregister
from acrobat.ir.traversal import walk
from acrobat.ir.types import FLOAT, INT, TensorType
from tests.backends.helpers import MODELS, SIZES, every_op_program, program


def test_every_kernel_op_has_a_numpy_and_a_cuda_rule():
    """Ops of the kinds that run in kernels have one rule per backend; host-side kinds
    (host arithmetic, host reads, ghost ops) never reach a kernel and have none."""
    for name, op in REGISTRY.items():
        if op.kind.in_kernel:
            assert name in NUMPY_RULES, f"{name}: no NumPy rule"
            assert name in CUDA_RULES, f"{name}: no CUDA rule"
        else:
            assert name not in NUMPY_RULES and name not in CUDA_RULES, name
    assert set(NUMPY_RULES) <= set(REGISTRY) and set(CUDA_RULES) <= set(REGISTRY)


def test_host_kinds_are_the_ops_outside_kernels():
    host_side = {name for name, op in REGISTRY.items() if not op.kind.in_kernel}
    reads = {"item", "argmax", *LIST_REDUCTIONS}  # the list reductions wait as reads do
    assert host_side == {n for n in REGISTRY if n.startswith("h.")} | reads | {"ghost"}


def test_cuda_lowerings_follow_the_fusion_kinds():
    """Products are cuBLAS steps, reductions their own launches, the rest fused."""
    for name, rule in CUDA_RULES.items():
        kind = REGISTRY[name].kind
        if kind is OpKind.REDUCTION:
            assert rule.lowering is Lowering.REDUCTION and rule.body, name
        elif rule.lowering is Lowering.GEMM:
            assert kind is OpKind.OPAQUE, name
        else:
            assert rule.lowering is Lowering.FUSED, name
            assert rule.load is not None or rule.graph is not None, name


def test_kinds_are_an_enum_that_still_compares_to_its_names():
    assert REGISTRY["dense"].kind is OpKind.OPAQUE and REGISTRY["dense"].kind == "opaque"
    assert OpKind("host_read") is OpKind.HOST_READ and REGISTRY["item"].reads_tensor_to_host


def test_positional_attributes_are_declared_attributes():
    for name, op in REGISTRY.items():
        assert set(op.positional) <= set(op.attrs), name
    assert REGISTRY["split"].positional == ("sections", "axis")
    assert REGISTRY["slice"].positional == ("start", "stop", "axis")
    m = acrobat.parse(
        "def main(x: Tensor[6]) -> Tensor[2]:\n    a, b, c = split(x, 3, 0)\n    return a + c\n"
    )
    (call,) = [e for e in walk(m.main.body) if isinstance(e, OpCall) and e.op == "split"]
    assert dict(call.attrs) == {"sections": 3, "axis": 0}


# (source ops, compiled kernels): FLOP totals per model and size, from the op_flops of
# before FLOP rules moved into the registry
OLD_FLOPS = {
    ("treelstm", "tiny"): (1872, 1872),
    ("treelstm", "small"): (1710592, 1710592),
    ("treelstm", "large"): (6829056, 6829056),
    ("mvrnn", "tiny"): (392, 392),
    ("mvrnn", "small"): (1081472, 1081472),
    ("mvrnn", "large"): (8519936, 8519936),
    ("birnn", "tiny"): (808, 1088),
    ("birnn", "small"): (279312, 542224),
    ("birnn", "large"): (1082896, 2133008),
    ("nestedrnn", "tiny"): (1160, 1160),
    ("nestedrnn", "small"): (1052928, 1052928),
    ("nestedrnn", "large"): (4203008, 4203008),
    ("drnn", "tiny"): (620, 612),
    ("drnn", "small"): (527620, 527364),
    ("drnn", "large"): (2103812, 2103300),
    ("berxit", "tiny"): (59408, 356040),
    ("berxit", "small"): (1867487248, 11204905032),
    ("berxit", "large"): (3295289360, 19771711560),
    ("stackrnn", "tiny"): (569, 569),
    ("stackrnn", "small"): (526081, 526081),
    ("stackrnn", "large"): (2100737, 2100737),
    ("treelstm_childsum", "tiny"): (1176, 1168),
    ("treelstm_childsum", "small"): (1053440, 1053184),
    ("treelstm_childsum", "large"): (4204032, 4203520),
}


def _source_flops(module) -> int:
    return sum(op_flops(e) for f in module.functions for e in walk(f.body) if isinstance(e, OpCall))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("model", MODELS)
def test_flop_rules_give_the_old_numbers(model, size):
    want_source, want_kernels = OLD_FLOPS[(model, size)]
    spec = acrobat.models.load(model, size)
    assert _source_flops(spec.module) == want_source
    # the numbers were taken before embedding tables existed; tables only remove work
    no_tables = acrobat.compile(
        spec.module, spec.params, acrobat.CompileOptions().without("embedding_tables")
    )
    assert sum(k.flops for k in no_tables.kernels.values()) == want_kernels
    assert sum(k.flops for k in program(model, size).kernels.values()) <= want_kernels


def test_flop_rules_of_the_every_op_program():
    prog, module, _ = every_op_program()
    assert _source_flops(module) == 288
    assert sum(k.flops for k in prog.kernels.values()) == 288


def test_flop_rules_per_kind():
    t = TensorType((4, 6), "float32")
    row = TensorType((6,), "float32")
    w = TensorType((3, 6), "float32")
    out = TensorType((4, 3), "float32")
    assert REGISTRY["dense"].flops([t, w], out, {}) == 2 * 6 * 12
    assert REGISTRY["dense"].flops([t, w, TensorType((3,), "float32")], out, {}) == 2 * 6 * 12 + 12
    assert REGISTRY["tanh"].flops([t], t, {}) == 24
    assert REGISTRY["gelu"].flops([t], t, {}) == 5 * 24
    assert REGISTRY["layer_norm"].flops([t, row, row], t, {}) == 5 * 24
    assert REGISTRY["sum"].flops([t], TensorType((), "float32"), {}) == 24
    assert REGISTRY["scalar"].flops([INT], TensorType((), "float32"), {}) == 1
    for name in ("reshape", "transpose", "slice", "concat", "embed", "zeros", "ones", "split"):
        assert REGISTRY[name].flops([t], t, {}) == 0, name
    assert REGISTRY["item"].flops([TensorType((1,), "float32")], FLOAT, {}) == 0
    assert REGISTRY["h.add"].flops([INT, INT], INT, {}) == 0


# ----------------------------------------------------------------------------- missing rules

ONLY_IN_IR = textwrap.dedent(
    """
    def main(x: Tensor[4]) -> Tensor[4]:
        return tanh(halve(x))
    """
)


@pytest.fixture
def op_without_rules():
    """``halve``: registered in the IR (so it parses, checks and evaluates), no lowering."""
    register("halve", 1, OpKind.ELEMWISE, lambda x: x * np.float32(0.5))(same_type_rule("halve"))
    yield "halve"
    unregister("halve")


def test_a_missing_numpy_rule_names_the_op(op_without_rules):
    module = acrobat.parse(ONLY_IN_IR)
    params = acrobat.init_params(module, seed=0)
    x = np.arange(4, dtype=np.float32)
    assert np.allclose(acrobat.evaluate(module, x, params), np.tanh(x / 2))
    prog = acrobat.compile(module, params)
    with pytest.raises(MissingLoweringError, match="no NumPy rule for op 'halve'") as err:
        acrobat.run(prog, [x], backend="numpy")
    assert err.value.op == "halve" and err.value.backend == "NumPy"
    (kernel,) = [k for k in prog.kernels.values()]
    with pytest.raises(MissingLoweringError, match="halve"):
        compile_numpy_kernel(kernel.function, params)


def test_a_missing_cuda_rule_names_the_op_when_the_plan_is_made(op_without_rules):
    module = acrobat.parse(ONLY_IN_IR)
    prog = acrobat.compile(module, acrobat.init_params(module, seed=0))
    (kernel,) = [k for k in prog.kernels.values()]
    with pytest.raises(MissingLoweringError, match="no CUDA rule for op 'halve'") as err:
        plan_kernel(kernel.function)
    assert err.value.op == "halve" and err.value.kernel == kernel.name
    assert "define_elementwise_op" in err.value.hint


def test_a_missing_rule_of_a_built_in_op_is_the_same_error(monkeypatch):
    prog = every_op_program()[0]
    monkeypatch.delitem(NUMPY_RULES, "softmax")
    monkeypatch.delitem(CUDA_RULES, "softmax")
    kernel = next(
        k
        for k in prog.kernels.values()
        if any(isinstance(e, OpCall) and e.op == "softmax" for e in walk(k.function.body))
    )
    with pytest.raises(MissingLoweringError, match="softmax"):
        compile_numpy_kernel(kernel.function, prog.params)
    with pytest.raises(MissingLoweringError, match="softmax"):
        plan_kernel(kernel.function)


def test_a_host_op_in_a_kernel_is_told_so():
    err = missing_rule("h.add", "CUDA", "k")
    assert isinstance(err, MissingLoweringError) and "host program" in err.hint
