"""TabulateEmbeddings: work that depends on one embedding row alone becomes a lookup in a
table computed at compile time, with the interpreter's values and the same errors."""

from __future__ import annotations

import numpy as np
import pytest

import acrobat
from acrobat.ir.nodes import OpCall
from acrobat.ir.traversal import walk
from acrobat.passes import tabulate
from acrobat.passes.anf import ToANF
from acrobat.passes.options import CompileOptions
from acrobat.passes.tabulate import TabulateEmbeddings
from tests.passes.helpers import check_pass, run, vec

LEAF = """
H = Size("H", 4)
V = Size("V", 12)
E: Param[V, H]
W: Param[3 * H, H]
b: Param[3 * H]

def main(w: int) -> tuple[Tensor[H], Tensor[H]]:
    i, o, u = split(dense(embed(E, w), W, b), 3)
    c = sigmoid(i) * tanh(u)
    return sigmoid(o) * tanh(c), c
"""


def anf(src: str):
    m = acrobat.parse(src)
    params = acrobat.init_params(m)
    out, _ = run([ToANF()], m, params)
    return out, params


def embeds(m) -> list[OpCall]:
    return [
        e for f in m.functions for e in walk(f.body) if isinstance(e, OpCall) and e.op == "embed"
    ]


def test_leaf_cell_becomes_two_lookups():
    m, params = anf(LEAF)
    out, ctx = check_pass(TabulateEmbeddings(), m, params, list(range(12)), case="leaf_cell")
    ops = [e.op for e in walk(out.main.body) if isinstance(e, OpCall)]
    assert ops == ["embed", "embed"]  # the projection and the gates are gone
    assert [p.name for p in out.params][-2:] == ["_tab0", "_tab1"]
    # each table row is what the interpreter computes for that id (the exports in binding
    # order: c, then the output gate's product)
    assert "let %c: Tensor[4] = embed($_tab0, %w)" in out.pretty()
    for w in range(12):
        h, c = acrobat.evaluate(m, w, params)
        np.testing.assert_allclose(ctx.params["_tab0"][w], c, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(ctx.params["_tab1"][w], h, rtol=1e-6, atol=1e-7)
    assert any("_tab" in text for _, text in ctx.log)
    for k, v in params.items():  # the weights given to compile are never changed
        np.testing.assert_array_equal(ctx.params[k], v)


def test_stacked_evaluation_equals_row_by_row(monkeypatch):
    m, params = anf(LEAF)
    _, ctx = run([TabulateEmbeddings()], m, params)
    monkeypatch.setattr(tabulate, "_stacked", lambda *a: None)
    _, slow = run([TabulateEmbeddings()], m, params)
    for name in ("_tab0", "_tab1"):
        np.testing.assert_allclose(ctx.params[name], slow.params[name], rtol=1e-6, atol=1e-7)


TWO_TABLES = """
H = Size("H", 4)
E: Param[7, H]
F: Param[5, H]
W: Param[H, H]

def main(w: int, h: Tensor[H]) -> Tensor[H]:
    x = tanh(dense(embed(E, w) + embed(F, w), W))
    return x + h
"""


def test_the_table_has_the_smallest_row_count_and_rejects_the_same_ids():
    m, params = anf(TWO_TABLES)
    rng = np.random.default_rng(0)
    xs = [(w, vec(rng, 4)) for w in range(5)]
    out, ctx = check_pass(TabulateEmbeddings(), m, params, xs)
    assert ctx.params["_tab0"].shape == (5, 4)
    # ``x + h`` reads a per-instance tensor: it stays
    assert [e.op for e in walk(out.main.body) if isinstance(e, OpCall)] == ["embed", "add"]
    for bad in (5, 6, -1):
        for mod, p in ((m, params), (out, ctx.params)):
            with pytest.raises(acrobat.EvaluationError):
                acrobat.evaluate(mod, (bad, xs[0][1]), p)
    prog = acrobat.compile(acrobat.parse(TWO_TABLES), params)
    good = xs[:2]
    for strategy in ("batched", "direct"):
        with pytest.raises(acrobat.InstanceError) as err:
            acrobat.run(prog, [good[0], (6, good[1][1]), good[1]], strategy=strategy)
        assert err.value.index == 1


@pytest.mark.parametrize(
    "body",
    [
        # data movement only: nothing to save
        "i, o = split(embed(E, w), 2)\n    return o",
        # a 2-d result cannot be a table row
        "return reshape(dense(embed(E, w), W), (2, 2))",
    ],
)
def test_guards_keep_the_block(body):
    src = f"""
H = Size("H", 4)
E: Param[9, H]
W: Param[H, H]

def main(w: int) -> Tensor[{"2" if "split" in body else "2, 2"}]:
    {body}
"""
    m, params = anf(src)
    out, _ = run([TabulateEmbeddings()], m, params)
    assert out == m


def test_table_budget(monkeypatch):
    m, params = anf(LEAF)
    # two tables of 12 rows x 4 floats: 384 bytes
    for table_bytes, tabulated in [(383, False), (384, True)]:
        monkeypatch.setattr(tabulate, "TABLE_BYTES", table_bytes)
        out, _ = run([TabulateEmbeddings()], m, params)
        assert (out != m) is tabulated


def test_evaluation_budget_applies_row_by_row(monkeypatch):
    m, params = anf(LEAF)
    monkeypatch.setattr(tabulate, "EVAL_BUDGET", 107)  # 9 ops on each of 12 rows: 108 calls
    out, _ = run([TabulateEmbeddings()], m, params)
    assert out != m  # every op has a stacked form: one call each
    monkeypatch.setattr(tabulate, "_stacked", lambda *a: None)
    for budget, tabulated in [(107, False), (108, True)]:
        monkeypatch.setattr(tabulate, "EVAL_BUDGET", budget)
        out, _ = run([TabulateEmbeddings()], m, params)
        assert (out != m) is tabulated


def test_a_lookup_read_outside_stays_a_lookup_of_its_table():
    src = """
H = Size("H", 4)
E: Param[9, H]
W: Param[H, H]

def main(w: int) -> tuple[Tensor[H], Tensor[H]]:
    x = embed(E, w)
    return x, tanh(dense(x, W))
"""
    m, params = anf(src)
    out, ctx = check_pass(TabulateEmbeddings(), m, params, list(range(9)))
    assert sorted(e.args[0].name for e in embeds(out)) == ["E", "_tab0"]
    assert [n for n in ctx.params if n.startswith("_tab")] == ["_tab0"]


TWO_INDICES = """
H = Size("H", 4)
E: Param[6, H]
W: Param[H, H]

def main(a: int, b: int) -> tuple[Tensor[H], Tensor[H], Tensor[H]]:
    x = tanh(dense(embed(E, a), W))
    y = sigmoid(embed(E, b))
    return x, y, x * y
"""


def test_each_index_gets_its_tables_and_mixed_work_stays():
    m, params = anf(TWO_INDICES)
    xs = [(a, b) for a in range(6) for b in (0, 5)]
    out, ctx = check_pass(TabulateEmbeddings(), m, params, xs)
    assert [e.args[1].name for e in embeds(out)] == ["a", "b"]
    assert {"_tab0", "_tab1"} <= set(ctx.params)
    assert "mul" in [e.op for e in walk(out.main.body) if isinstance(e, OpCall)]


def test_same_work_in_two_functions_shares_one_table():
    leaf = LEAF.split("def main")[1]
    src = (
        LEAF.split("def main")[0]
        + "def leaf1"
        + leaf
        + "\ndef leaf2"
        + leaf
        + """
def main(a: int, b: int) -> tuple[Tensor[H], Tensor[H]]:
    h1, c1 = leaf1(a)
    h2, c2 = leaf2(b)
    return h1 + h2, c1 * c2
"""
    )
    m, params = anf(src)
    out, ctx = check_pass(TabulateEmbeddings(), m, params, [(1, 2), (11, 0)])
    assert sorted(n for n in ctx.params if n.startswith("_tab")) == ["_tab0", "_tab1"]
    assert len(embeds(out)) == 4


def test_off_leaves_module_unchanged():
    m, params = anf(LEAF)
    out, ctx = run([TabulateEmbeddings()], m, params, CompileOptions(embedding_tables=False))
    assert out == m and set(ctx.params) == set(params)


def test_compiled_treelstm_looks_its_leaves_up_and_equals_the_reference():
    spec = acrobat.models.load("treelstm", "tiny")
    prog = acrobat.compile(spec.module, spec.params)
    leaf = next(k for k in prog.kernels.values() if "_tab0" in k.weights)
    assert {e.op for e in walk(leaf.function.body) if isinstance(e, OpCall)} == {"embed"}
    xs = spec.instances(6)
    for strategy in ("batched", "direct"):
        res = acrobat.run(prog, xs, strategy=strategy)
        for x, y in zip(xs, res.outputs):
            assert acrobat.values_equal(y, spec.evaluate(x), rtol=1e-5, atol=1e-6)
