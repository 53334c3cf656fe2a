"""NestedRNN: an outer GRU over a graph's nodes, an inner RNN over each node's edges.

The graph-generation model of ACRoBat's artifact (after GraphRNN, You et al., ICML 2018).
An instance is a ``List[List[int]]``: one entry per node, each the list of that node's
edge token ids. For node ``k`` the inner RNN starts from the current outer state and reads
the node's edges (``x_j = E[edge_j]``)::

    e_0 = h_{k-1},   e_j = tanh(W_e x_j + U_e e_{j-1} + b_e)

and its final state ``x = e_last`` (``h_{k-1}`` itself for a node without edges) is the
input of a GRU step (Cho et al. 2014; separate weights per gate)::

    z = sigmoid(W_z x + U_z h + b_z)
    r = sigmoid(W_r x + U_r h + b_r)
    n = tanh(W_n x + U_n (r * h) + b_n)
    h_k = (1 - z) * n + z * h,            h_0 = 0

``main`` returns the final outer state (``h_0`` for a graph without nodes). Default data:
1..20 nodes, each with 0..10 edges (uniform counts), ids uniform in the vocabulary.
"""

import numpy as np

from acrobat.models import data

SOURCE = '''\
"""NestedRNN: outer GRU over nodes, inner RNN over each node's edges (graph generation)."""
H = Size("H", 256)
V = Size("V", 1000)
E: Param[V, H]
W_e: Param[H, H]
U_e: Param[H, H]
b_e: Param[H]
W_z: Param[H, H]
U_z: Param[H, H]
b_z: Param[H]
W_r: Param[H, H]
U_r: Param[H, H]
b_r: Param[H]
W_n: Param[H, H]
U_n: Param[H, H]
b_n: Param[H]

def edges(es: List[int], e: Tensor[H]) -> Tensor[H]:
    match es:
        case Nil():
            return e
        case Cons(edge, rest):
            return edges(rest, tanh(dense(embed(E, edge), W_e, b_e) + dense(e, U_e)))

def gru(x: Tensor[H], h: Tensor[H]) -> Tensor[H]:
    z = sigmoid(dense(x, W_z, b_z) + dense(h, U_z))
    r = sigmoid(dense(x, W_r, b_r) + dense(h, U_r))
    n = tanh(dense(x, W_n, b_n) + dense(r * h, U_n))
    return (1.0 - z) * n + z * h

def nodes(ns: List[List[int]], h: Tensor[H]) -> Tensor[H]:
    match ns:
        case Nil():
            return h
        case Cons(es, rest):
            return nodes(rest, gru(edges(es, h), h))

def main(graph: List[List[int]]) -> Tensor[H]:
    return nodes(graph, zeros(H))
'''

SIZES = {"tiny": {"H": 8, "V": 50}, "small": {"H": 256, "V": 1000}, "large": {"H": 512, "V": 1000}}
DESCRIPTION = "NestedRNN: outer GRU over nodes, inner RNN over each node's edges (graph generation)"
FEATURES = ("nested list recursion", "inner loop length varies per node")
DEFAULT_DATA = "1..20 nodes with 0..10 edge ids each, uniform (data.nested_tokens)"
DECISIONS = ("tensor",)
NODES, EDGES = (1, 20), (0, 10)


def source(decisions: str = "tensor") -> str:
    """The program text (no tensor-dependent decisions, so one mode)."""
    return SOURCE


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` graphs: node and edge counts uniform in ``NODES`` and ``EDGES``."""
    rng = np.random.default_rng(seed)
    return [data.nested_tokens(rng, sizes["V"], NODES, EDGES) for _ in range(n)]


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """Edge ids must lie in the vocabulary."""
    return data.check_token_ids(instance, sizes["V"], "edge id")
