"""HoistStaticDepth: kernel calls that do not depend on recursion get a static depth.

Besides goldens, a soundness check runs every model's compiled program with an
interpreter that records where each tensor was made: a call hoisted to depth ``d``
must only read tensors made by hoisted calls at depths below ``d`` (in the same
phase) or inputs, never a tensor made by dynamic code (which runs after every
hoisted level).
"""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.compiler import default_passes
from acrobat.ir.evaluate import Interpreter
from acrobat.ir.nodes import KernelCall, Phase
from acrobat.ir.parser import parse_module
from acrobat.ir.values import AdtValue, entry_args, from_list
from acrobat.models import MODEL_NAMES, VARIANTS
from acrobat.passes.anf import ToANF
from acrobat.passes.fuse import FuseOps
from acrobat.passes.hoist import HoistStaticDepth
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, kernel_calls, run, vec

SRC = """
H = Size("H", 4)
U: Param[H, H]

def rnn(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            y = dense(x, U)
            w = tanh(dense(y, U))
            return rnn(rest, w * h)

def main(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    return rnn(xs, sigmoid(h))
"""


def until(name: str, spec, options=None):
    """The model's module after the pipeline's first pass called ``name``."""
    passes = default_passes()
    upto = [p.name for p in passes].index(name) + 1
    return run(passes[:upto], spec.module, spec.params, options)


def test_hoist_golden():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m)
    fused, _ = run([ToANF(), FuseOps()], m, params)
    rng = np.random.default_rng(0)
    xs = [(from_list([vec(rng, 4) for _ in range(k)]), vec(rng, 4)) for k in (0, 3)]
    out, ctx = check_pass(HoistStaticDepth(), fused, params, xs, case="rnn")
    assert [k.depth for k in kernel_calls(out, "rnn")] == [0, 1, None]
    assert [k.depth for k in kernel_calls(out, "main")] == [0]
    assert ctx.facts.depth.max_static == 1
    assert ctx.notes["HoistStaticDepth"] == [
        "rnn: 2 kernel call(s) at static depth 0..1",
        "main: 1 kernel call(s) at static depth 0",
    ]
    off, _ = run([HoistStaticDepth()], fused, params, CompileOptions(hoisting=False))
    assert off == fused


def test_treelstm_leaves_are_hoisted():
    spec = acrobat.models.load("treelstm", "tiny")
    no_tables = CompileOptions().without("embedding_tables")
    out, _ = until("HoistStaticDepth", spec, no_tables)
    # Leaf: embed (depth 0), then the gate kernel (depth 1); Node: concat, gates dynamic
    assert [k.depth for k in kernel_calls(out, "cell")] == [0, 1, None, None]
    # with embedding tables the leaf is two lookups (depth 0 both)
    out, _ = until("HoistStaticDepth", spec)
    assert [k.depth for k in kernel_calls(out, "cell")] == [0, 0, None, None]
    prog = acrobat.compile(spec.module, spec.params)
    leaf, node = kernel_calls(prog.module, "cell")
    assert (leaf.depth, node.depth) == (0, None)
    assert "embed" in [b.value.op for b in prog.kernels[leaf.kernel].ops if hasattr(b.value, "op")]


def test_birnn_input_projections_of_both_directions_are_hoisted():
    spec = acrobat.models.load("birnn", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    # word embeddings at 0, the forward input projections W_fw x + b_fw at 1
    assert [k.depth for k in kernel_calls(prog.module, "word")] == [0]
    proj, step = kernel_calls(prog.module, "rnn")
    assert (proj.depth, step.depth) == (1, None)
    assert prog.kernels[proj.kernel].weights == ("W_fw", "b_fw")
    # The backward RNN reads reverse(xs), and the one generic `reverse` also reverses the
    # RNN's outputs (in `backward`): its summary joins both uses to TOP, but reverse records
    # nothing, so each call's result is available once its own arguments are.
    proj, step = kernel_calls(prog.module, "rnn_dup1")
    assert (proj.depth, step.depth) == (1, None)
    assert prog.kernels[proj.kernel].weights == ("W_bw", "b_bw")
    # after the phase, the classifier reads finished values: hoisted at 0 of phase 2
    assert [k.depth for k in kernel_calls(prog.module, "classify")] == [0]


def test_explain_names_hoisted_ops_and_depths():
    spec = acrobat.models.load("treelstm", "tiny")
    text = acrobat.explain(spec.module, spec.params)
    assert "cell: 1 kernel call(s) at static depth 0" in text
    assert "static depths: 0..0 hoisted; dynamic code starts at 1" in text


DYNAMIC = "dynamic"


def _arrays(v):
    if isinstance(v, np.ndarray):
        yield v
    elif isinstance(v, tuple | AdtValue):
        for x in v.fields if isinstance(v, AdtValue) else v:
            yield from _arrays(x)


class DepthOracle(Interpreter):
    """The reference interpreter, recording (phase, depth) of each kernel output."""

    def __init__(self, m, params):
        super().__init__(m, params)
        self.made: dict[int, tuple] = {}  # id -> (array kept alive, phase, depth)
        self.phase = 0
        self.violations: list[tuple] = []
        self.hoisted = 0

    def ev(self, e, env):
        if type(e) is KernelCall:
            args = []
            for a in e.args:
                args.append((yield from self.sub(a, env)))
            if e.depth is not None:
                self.hoisted += 1
                for arr in (x for a in args for x in _arrays(a)):
                    _, phase, made_at = self.made.get(id(arr), (None, None, None))
                    if phase == self.phase and (made_at == DYNAMIC or made_at >= e.depth):
                        self.violations.append((e.kernel, e.depth, made_at))
            out = yield self.call(e.kernel, args)
            for arr in _arrays(out):
                self.made[id(arr)] = (arr, self.phase, DYNAMIC if e.depth is None else e.depth)
            return out
        if type(e) is Phase:
            self.phase += 1
        return (yield from super().ev(e, env))


@pytest.mark.parametrize("name", MODEL_NAMES + VARIANTS)
@pytest.mark.parametrize("coarsening", [True, False])
def test_hoisted_calls_only_read_ready_values(name, coarsening):
    spec = acrobat.models.load(name, "tiny")
    prog = acrobat.compile(spec.module, spec.params, CompileOptions(coarsening=coarsening))
    hoisted = 0
    for x in spec.instances(3, seed=0):
        oracle = DepthOracle(prog.module, prog.params)
        oracle.run(prog.module.entry, list(entry_args(prog.module, x)))
        assert oracle.violations == []
        hoisted += oracle.hoisted
    assert hoisted > 0


def test_the_oracle_catches_a_wrong_depth():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m)
    good, _ = run([ToANF(), FuseOps(), HoistStaticDepth()], m, params)
    # hoist the recurrent step w * h too: its second execution reads its own first output
    bad = parse_module(good.pretty().replace("= @rnn_k2(", "= hoist(2) @rnn_k2("))
    rng = np.random.default_rng(3)
    x = (from_list([vec(rng, 4) for _ in range(3)]), vec(rng, 4))
    oracle = DepthOracle(bad, params)
    oracle.run(bad.entry, list(entry_args(bad, x)))
    assert ("rnn_k2", 2, 2) in oracle.violations
