"""Twin kernels (acrobat/codegen/twins.py): kernels with the same code but other weights
are one DFG kernel, batched together and run by one call of their group kernel; results
equal the reference interpreter and the same program without twin launches."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.codegen.twins import find_twins
from acrobat.frontend import parse
from acrobat.ir.evaluate import evaluate
from acrobat.ir.values import from_list
from acrobat.runtime.run import prepare
from acrobat.runtime.schedule import get_policy, register_policy, unregister_policy
from acrobat.trace import BatchFormed, KernelCompiled, NodeRecorded
from tests.runtime.helpers import assert_outputs_equal, bad_token_program, batch, program

# Two chains over the same inputs with their own weights: specialization clones ``chain``
# and ``step``, so the step kernels are twins; their weights differ in a dense (matrix and
# bias) and in an elementwise op (``* c``: read per row).
TWO_CHAINS = """
H = Size("H", 8)
W1: Param[H, H]
W2: Param[H, H]
b1: Param[H]
b2: Param[H]
c1: Param[H]
c2: Param[H]

def step(x: Tensor[H], h: Tensor[H], W: Tensor[H, H], b: Tensor[H], c: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x + h, W, b) * c)

def chain(xs: List[Tensor[H]], h: Tensor[H], W: Tensor[H, H], b: Tensor[H], c: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            return chain(rest, step(x, h, W, b, c), W, b, c)

def main(xs: List[Tensor[H]]) -> tuple[Tensor[H], Tensor[H]]:
    return parallel(chain(xs, zeros(H), W1, b1, c1), chain(xs, zeros(H), W2, b2, c2))
"""


def _two_chains(seed: int = 0):
    module = parse(TWO_CHAINS)
    rng = np.random.default_rng(seed)
    params = {
        p.name: (rng.standard_normal(p.ty.shape) * 0.5).astype(np.float32) for p in module.params
    }
    lengths = [3, 1, 5, 0, 4, 2]
    xs = [from_list([rng.standard_normal(8).astype(np.float32) for _ in range(n)]) for n in lengths]
    return module, params, xs


def test_birnn_directions_are_twins():
    prog = program("birnn")
    names = [prog.kernels[n].name for n in prepare(prog).host.kernels]
    groups = {
        tuple(names[i] for i in t.members): t.varying
        for t in find_twins([prog.kernels[n].function for n in names])
    }
    assert groups[("rnn_k1", "rnn_dup1_k1")] == {"U_fw": ("U_fw", "U_bw")}
    assert groups[("rnn_k0", "rnn_dup1_k0")] == {
        "W_fw": ("W_fw", "W_bw"),
        "b_fw": ("b_fw", "b_bw"),
    }


def test_birnn_twins_run_as_one_launch_per_step():
    xs, refs = batch("birnn", 6, 2)
    on = acrobat.run(program("birnn"), xs, trace_level="nodes")
    off = acrobat.run(program("birnn", ("twin_launches",)), xs)
    assert_outputs_equal(on.outputs, refs, "twin launches")
    assert_outputs_equal(off.outputs, refs, "without")
    kernels = {b.kernel for b in on.trace.of(BatchFormed)}
    assert "rnn_k1+rnn_dup1_k1" in kernels and "rnn_k1" not in kernels
    # each direction's step: one launch where there were two
    assert on.stats["launches"] < off.stats["launches"]
    assert on.stats["nodes"] == off.stats["nodes"]
    # the nodes keep the kernel that recorded them; the group kernel's source is traced
    assert {"rnn_k1", "rnn_dup1_k1"} <= {e.kernel for e in on.trace.of(NodeRecorded)}
    source = next(e.source for e in on.trace.of(KernelCompiled) if e.kernel == "rnn_k1+rnn_dup1_k1")
    # one product of both directions' weights (reading the step's inputs in place)
    assert ("_gdense_rows" in source or "_gdense_from" in source) and "WT_U_bw" in source


@pytest.mark.parametrize("policy", ["acrobat", "dynet-depth", "dynet-agenda", "eager"])
def test_a_group_with_a_weight_read_per_row_equals_the_reference(policy):
    module, params, xs = _two_chains()
    prog = acrobat.compile(module, params)
    rt = prepare(prog)
    groups = rt.executor.names[rt.executor.n_kernels :]
    assert groups, "the two step kernels are twins"
    sources = "".join(rt.sources[g] for g in groups)
    assert "_seg_rows" in sources  # ``* c`` reads each row's member's c
    refs = [evaluate(module, x, params) for x in xs]
    for options in (acrobat.CompileOptions(), acrobat.CompileOptions().without("twin_launches")):
        res = acrobat.run(acrobat.compile(module, params, options), xs, policy=policy)
        assert_outputs_equal(res.outputs, refs, f"{policy} {options.twin_launches}")


def test_a_batch_in_any_node_order_splits_by_member():
    """A user's policy may list a batch's nodes in any order: the executor orders each
    twin group's batch by member (stably) and tells the kernel which rows are whose."""
    acro = get_policy("acrobat")

    @register_policy("reversed-batches")
    def reversed_batches(dfg, inline_depth):
        return [b._replace(nodes=b.nodes[::-1].copy()) for b in acro(dfg, inline_depth)]

    try:
        module, params, xs = _two_chains(1)
        refs = [evaluate(module, x, params) for x in xs]
        res = acrobat.run(acrobat.compile(module, params), xs, policy="reversed-batches")
        assert_outputs_equal(res.outputs, refs, "reversed")
        xs, refs = batch("birnn", 5, 3)
        res = acrobat.run(program("birnn"), xs, policy="reversed-batches")
        assert_outputs_equal(res.outputs, refs, "birnn reversed")
    finally:
        unregister_policy("reversed-batches")


def test_twins_read_apart_are_not_grouped():
    """A weight the group kernel cannot split by member (here an embedding table) keeps
    the kernels apart."""
    src = """
H = Size("H", 4)
V = Size("V", 10)
E1: Param[V, H]
E2: Param[V, H]

def look(w: int, E: Tensor[V, H]) -> Tensor[H]:
    return tanh(embed(E, w))

def main(w: int) -> tuple[Tensor[H], Tensor[H]]:
    return parallel(look(w, E1), look(w, E2))
"""
    module = parse(src)
    rng = np.random.default_rng(0)
    params = {p.name: rng.standard_normal(p.ty.shape).astype(np.float32) for p in module.params}
    prog = acrobat.compile(module, params)
    assert not find_twins([k.function for k in prog.kernels.values()])
    res = acrobat.run(prog, [1, 7, 3])
    assert_outputs_equal(res.outputs, [evaluate(module, w, params) for w in (1, 7, 3)], "embed")


def test_a_tiled_group_call_gives_each_tile_its_members_rows():
    from acrobat.backends.tiling import tiled_group

    calls = []

    def fn(n, x, out=None, _segs=()):
        calls.append((n, x.tolist(), _segs))
        out[0][...] = x * 10

    x = np.arange(7)
    out = [np.zeros(7, np.int64)]
    tiled_group(fn, 3)(7, x, out=out, _segs=((1, 2), (0, 5)))
    assert calls == [
        (3, [0, 1, 2], ((1, 2), (0, 1))),
        (3, [3, 4, 5], ((0, 3),)),
        (1, [6], ((0, 1),)),
    ]
    assert out[0].tolist() == (x * 10).tolist()


def test_a_bad_token_in_a_group_batch_names_its_instance():
    """An embedding index out of range inside a twin group's launch raises the same typed
    error, for the same instance, as without twin launches."""
    on, off = bad_token_program(), bad_token_program(twins=False)
    assert prepare(on).executor.groups, "the two look kernels are twins"
    errors = []
    for prog in (on, off):
        with pytest.raises(acrobat.InstanceError) as e:
            acrobat.run(prog, [1, 7, 12, 3], strategy="batched")
        errors.append(e.value)
    assert errors[0].index == errors[1].index == 2
    assert "look" in str(errors[0]) and "+" not in str(errors[0]).split(":")[0]
