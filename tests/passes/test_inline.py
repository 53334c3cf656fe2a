"""InlineSmallFunctions: small non-recursive callees spliced into their callers."""

from __future__ import annotations

import numpy as np

import acrobat
from acrobat.analysis.callgraph import call_graph
from acrobat.ir.nodes import FnCall, Map, Parallel
from acrobat.ir.traversal import walk
from acrobat.ir.values import from_list
from acrobat.passes.anf import ToANF
from acrobat.passes.inline import InlineSmallFunctions
from acrobat.passes.options import CompileOptions
from tests.passes.helpers import check_pass, run, vec

SRC = """
H = Size("H", 4)
W: Param[H, H]

def top(stack: List[Tensor[H]]) -> Tensor[H]:
    match stack:
        case Cons(h, _):
            return h
        case Nil():
            return zeros(H)

def layer(x: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x, W))

def two(x: Tensor[H]) -> Tensor[H]:
    y = layer(x)
    return layer(y) + y

def total(xs: List[Tensor[H]]) -> Tensor[H]:
    match xs:
        case Nil():
            return zeros(H)
        case Cons(x, rest):
            return layer(x) + total(rest)

def main(xs: List[Tensor[H]]) -> Tensor[H]:
    a = two(top(xs))
    b, c = parallel(layer(a), two(a))
    d = total(map(layer, xs))
    return a + b + c + d
"""


def setup():
    m = acrobat.parse(SRC)
    params = acrobat.init_params(m)
    anf, _ = run([ToANF()], m, params)
    rng = np.random.default_rng(0)
    xs = [from_list([vec(rng, 4) for _ in range(k)]) for k in (0, 1, 3)]
    return anf, params, xs


def calls(m, fn):
    return [e.fn for e in walk(m.function_map[fn].body) if isinstance(e, FnCall)]


def test_inline_golden():
    m, params, xs = setup()
    out, ctx = check_pass(InlineSmallFunctions(), m, params, xs, case="helpers")
    # main: top and two inlined (and layer inside two, bottom-up); the calls inside
    # parallel and map are independent by declaration and stay calls
    main = out.function_map["main"].body
    par = next(e for e in walk(main) if isinstance(e, Parallel))
    assert [c.fn for c in par.calls] == ["layer", "two"]
    assert next(e for e in walk(main) if isinstance(e, Map)).fn == "layer"
    assert sorted(c for c in calls(out, "main") if c not in ("layer", "two")) == ["total"]
    # the recursive function is never inlined, but its small callee is
    assert calls(out, "total") == ["total"]
    assert calls(out, "two") == []
    assert ctx.notes["InlineSmallFunctions"] == [
        "two: inlined 2 call(s)",
        "total: inlined 1 call(s)",
        "main: inlined 2 call(s)",
    ]


def test_inlined_match_renames_pattern_variables():
    m, params, _ = setup()
    out, _ = run([InlineSmallFunctions()], m, params)
    text = out.pretty()
    # top's pattern variable %h becomes a fresh name of main
    assert "case Cons(%h_1: Tensor[4], _) => {\n      %h_1\n" in text


def test_limit_zero_inlines_nothing():
    m, params, xs = setup()
    out, ctx = check_pass(
        InlineSmallFunctions(), m, params, xs, options=CompileOptions(inline_max_bindings=0)
    )
    assert out == m
    assert "InlineSmallFunctions" not in ctx.notes


def test_recursive_and_entry_never_inlined():
    m, params, _ = setup()
    big = CompileOptions(inline_max_bindings=1000)
    out, _ = run([InlineSmallFunctions()], m, params, big)
    cg = call_graph(out)
    assert "total" in cg.recursive
    assert "total" in calls(out, "main") and "main" in out.function_map


def test_a_callee_is_judged_by_its_size_after_inlining():
    """f_i(x) = f_{i-1}(f_{i-1}(x)): judged before inlining every f_i is small, so each takes
    in its callee's whole inlined body; judged after, an inlined body is within the limit,
    so a function grows by at most the limit per call it makes."""
    from acrobat.bench.compile_time import doubling_chain
    from acrobat.passes.inline import size

    m = acrobat.parse(doubling_chain(12))
    anf, _ = run([ToANF()], m, {})
    limit = CompileOptions().inline_max_bindings
    out, ctx = run([InlineSmallFunctions()], anf, {})
    calls_in = {f.name: len(calls(anf, f.name)) for f in anf.functions}
    for f in out.functions:
        assert size(f) <= size(anf.function_map[f.name]) + calls_in[f.name] * limit
    assert "f1: inlined 1 call(s)" in ctx.notes["InlineSmallFunctions"]  # f0 fits
    assert calls(out, "main") == ["f11"]  # f11 is over the limit once its calls are in
