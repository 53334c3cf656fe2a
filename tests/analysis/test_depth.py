"""Static depths: exact levels for straight-line code, TOP (None) for what recursion feeds."""

from __future__ import annotations

import acrobat
import acrobat.analysis.depth as depth_mod
from acrobat.analysis.depth import TOP, is_tensor_step, longest_chain, static_depths
from acrobat.passes.anf import ToANF
from tests.passes.helpers import run

HEAD = """
H = Size("H", 4)
W: Param[H, H]
U: Param[H, H]
"""

# mutual recursion: the input projections y only read list elements; h is recurrent
EVEN_ODD = (
    HEAD
    + """
def even(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            y = dense(x, W)
            h2 = tanh(y + dense(h, U))
            return odd(rest, h2)

def odd(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    match xs:
        case Nil():
            return h
        case Cons(x, rest):
            z = dense(x, U)
            h3 = sigmoid(z + dense(h, W))
            return even(rest, h3)

def main(xs: List[Tensor[H]], h: Tensor[H]) -> Tensor[H]:
    return even(xs, h)
"""
)

STRAIGHT = (
    HEAD
    + """
def pair(x: Tensor[H]) -> tuple[Tensor[H], Tensor[H]]:
    a = tanh(x)
    return a, dense(dense(a, W), U)

def main(x: Tensor[H]) -> Tensor[H]:
    s, d = pair(x)
    u = sigmoid(s)
    c = d + u
    n = item(c[0:1])
    phase()
    return tanh(c)
"""
)


def analyse(src):
    m, _ = run([ToANF()], acrobat.parse(src), {})
    return m, static_depths(m, is_tensor_step)


def test_mutual_recursion_terminates_with_top_for_recurrent_sites():
    m, r = analyse(EVEN_ODD)
    assert r.sites[("even", "y")] == 0 and r.sites[("odd", "z")] == 0
    assert r.sites[("even", "h2")] is TOP and r.sites[("odd", "h3")] is TOP
    dynamic = {k for k, v in r.sites.items() if v is TOP}
    # every op reading the recurrent state is TOP: dense(h, .), the add, the activation
    assert {fn for fn, _ in dynamic} == {"even", "odd"} and len(dynamic) == 6
    assert r.max_static == 0


def test_straight_line_depths_are_exact():
    m, r = analyse(STRAIGHT)
    # pair: a = tanh(x) at 0, the two dense ops at 1 and 2
    assert sorted(v for (fn, _), v in r.sites.items() if fn == "pair") == [0, 1, 2]
    # tuple fields keep their own depth: sigmoid(s) runs at 1, not after the dense chain
    assert r.sites[("main", "u")] == 1
    assert r.sites[("main", "c")] == 3  # d is available at 3
    # slicing c for item() runs at 4; after phase() every live value is ready at 0 again
    assert r.sites[("main", "t_1")] == 4 and r.sites[("main", "t_2")] == 0
    assert r.max_static == 4
    # the cap bounds every chain without recursion: 3 ops in pair + 4 in main, plus one
    assert r.cap == longest_chain(m, is_tensor_step) == 8


# one host-only `rev` used twice: on inputs (depth 0) and on recurrent outputs (TOP)
REVERSE_TWICE = (
    HEAD
    + """
def rev(xs: List[Tensor[H]], acc: List[Tensor[H]]) -> List[Tensor[H]]:
    match xs:
        case Nil():
            return acc
        case Cons(x, rest):
            return rev(rest, Cons(x, acc))

def run(xs: List[Tensor[H]], h: Tensor[H]) -> List[Tensor[H]]:
    match xs:
        case Nil():
            return Nil()
        case Cons(x, rest):
            y = dense(x, W)
            h2 = tanh(y + dense(h, U))
            return Cons(h2, run(rest, h2))

def main(xs: List[Tensor[H]], h: Tensor[H]) -> List[Tensor[H]]:
    return rev(run(rev(xs, Nil()), h), Nil())
"""
)


def test_a_step_free_call_is_available_once_its_arguments_are():
    """``rev``'s summary joins both calls (TOP), but it makes no step: the first call's
    result is made of inputs, so ``run``'s input projection still has a fixed depth."""
    m, r = analyse(REVERSE_TWICE)
    assert r.sites[("run", "y")] == 0
    assert r.sites[("run", "h2")] is TOP


def test_a_doubling_chain_reaches_its_fixed_point_in_few_evaluations():
    """f_i(x) = f_{i-1}(f_{i-1}(x)): f_0's parameter joins its own result, so it climbs
    towards the chain's length 2**19 one level per round unless widening is delayed; with
    it, a few evaluations per function (200,000 for 16 functions without)."""
    from acrobat.bench.compile_time import doubling_chain

    m, r = analyse(doubling_chain(20))
    assert r.cap > 2**19
    assert r.evaluations <= 4 * depth_mod.GROWTH_LIMIT * len(m.functions)
    assert r.sites == {("f0", "t_1"): TOP}  # tanh(x), x fed by its own result


def test_delayed_widening_changes_no_depth_that_stays_below_the_limit(monkeypatch):
    """The widening after GROWTH_LIMIT growths gives the same depths as plain iteration
    on programs whose values climb, and on one whose values grow without a cycle."""
    from acrobat.bench.compile_time import doubling_chain

    for src in (doubling_chain(6), EVEN_ODD, STRAIGHT):
        m, _ = run([ToANF()], acrobat.parse(src), {})
        delayed = static_depths(m, is_tensor_step)
        monkeypatch.setattr(depth_mod, "GROWTH_LIMIT", 10**9)
        plain = static_depths(m, is_tensor_step)
        monkeypatch.undo()
        assert delayed.sites == plain.sites
