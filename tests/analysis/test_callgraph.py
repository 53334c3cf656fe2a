"""The call graph: SCCs (mutual recursion included), recursion flags, reachability."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import acrobat
from acrobat.analysis.callgraph import call_graph
from acrobat.ir.parser import parse_module

EVEN_ODD = """
H = Size("H", 4)

def even(n: int, x: Tensor[H]) -> Tensor[H]:
    if n == 0:
        return x
    return odd(n - 1, tanh(x))

def odd(n: int, x: Tensor[H]) -> Tensor[H]:
    if n == 0:
        return sigmoid(x)
    return even(n - 1, x)

def unused(x: Tensor[H]) -> Tensor[H]:
    return x

def main(n: int, x: Tensor[H]) -> Tensor[H]:
    return even(n, x)
"""


def test_even_odd_is_one_recursive_scc():
    cg = call_graph(acrobat.parse(EVEN_ODD))
    assert cg.scc_of("even") == ("even", "odd") == cg.scc_of("odd")
    assert cg.recursive == {"even", "odd"}
    assert cg.reachable == {"main", "even", "odd"}
    order = [n for scc in cg.sccs for n in scc]
    assert order.index("even") < order.index("main")  # callees first


def test_models():
    expected = {
        "treelstm": {"cell"},
        "birnn": {"rnn", "reverse", "pair_up"},
        "drnn": {"expand", "first_child", "next_sibling"},
        "berxit": set(),
    }
    for name, recursive in expected.items():
        cg = call_graph(acrobat.models.load(name, "tiny").module)
        assert cg.recursive == recursive, name
    cg = call_graph(acrobat.models.load("drnn", "tiny").module)
    assert cg.scc_of("expand") == ("expand", "first_child", "next_sibling")


def module_text(n: int, edges: set[tuple[int, int]], roots: set[int]) -> str:
    lines = ["# acrobat IR"]
    for i in range(n):
        calls = [f"  let %c{j}: int = @f{j}(%x);" for (a, j) in sorted(edges) if a == i]
        lines += [f"def @f{i}(%x: int) -> int {{", *calls, "  %x", "}"]
    calls = [f"  let %c{j}: int = @f{j}(%x);" for j in sorted(roots)]
    lines += ["def @main(%x: int) -> int {", *calls, "  %x", "}"]
    return "\n".join(lines) + "\n"


def closure(nodes, succ):
    reach = {v: set(succ[v]) for v in nodes}
    changed = True
    while changed:
        changed = False
        for v in nodes:
            new = set().union(reach[v], *(reach[w] for w in reach[v]))
            if new != reach[v]:
                reach[v], changed = new, True
    return reach


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=14),
            st.sets(st.integers(0, n - 1), max_size=3),
        )
    )
)
def test_sccs_match_mutual_reachability(graph):
    n, edges, roots = graph
    cg = call_graph(parse_module(module_text(n, edges, roots)))
    names = [f"f{i}" for i in range(n)] + ["main"]
    succ = {v: set() for v in names}
    for a, b in edges:
        succ[f"f{a}"].add(f"f{b}")
    succ["main"] = {f"f{r}" for r in roots}
    reach = closure(names, succ)
    for v in names:
        same = {w for w in names if w == v or (w in reach[v] and v in reach[w])}
        assert set(cg.scc_of(v)) == same
        assert (v in cg.recursive) == (v in reach[v])
    assert cg.reachable == {"main"} | reach["main"]
    position = {v: i for i, scc in enumerate(cg.sccs) for v in scc}
    for v in names:
        for w in succ[v]:
            assert position[w] <= position[v]  # callees before callers
