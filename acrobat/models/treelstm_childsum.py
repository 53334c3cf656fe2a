"""Child-sum TreeLSTM (Tai, Socher & Manning, ACL 2015, section 3.1) over n-ary trees.

Every node holds a word and any number of children (a leaf has none). With
``x = E[word]`` and the children's states ``(h_k, c_k)`` (computed by a parallel ``map``)::

    h~  = sum_k h_k
    i   = sigmoid(W_i x + U_i h~ + b_i)
    o   = sigmoid(W_o x + U_o h~ + b_o)
    u   = tanh(W_u x + U_u h~ + b_u)
    f_k = sigmoid(W_f x + U_f h_k + b_f)          one forget gate per child (a parallel map)
    c   = i * u + sum_k f_k * c_k
    h   = o * tanh(c)

``W_i, W_o, W_u`` are stacked into ``W_iou`` [3H, H] (likewise ``U_iou``, ``b_iou``).
``main`` returns ``h`` at the root. Default data: SST-like word counts arranged as random
recursive trees with 1..4 children per inner node (``data.nary_tree``).
"""

import numpy as np

from acrobat.models import data

SOURCE = '''\
"""Child-sum TreeLSTM (Tai et al. 2015) over n-ary trees."""
H = Size("H", 256)
V = Size("V", 1000)
E: Param[V, H]
W_iou: Param[3 * H, H]
U_iou: Param[3 * H, H]
b_iou: Param[3 * H]
W_f: Param[H, H]
U_f: Param[H, H]
b_f: Param[H]

class NTree(ADT):
    NNode: (int, List[NTree])

def sum_h(kids: List[tuple[Tensor[H], Tensor[H]]]) -> Tensor[H]:
    match kids:
        case Nil():
            return zeros(H)
        case Cons(kid, rest):
            h, c = kid
            return h + sum_h(rest)

def sum_all(xs: List[Tensor[H]]) -> Tensor[H]:
    match xs:
        case Nil():
            return zeros(H)
        case Cons(x, rest):
            return x + sum_all(rest)

def forget(kid: tuple[Tensor[H], Tensor[H]], fx: Tensor[H]) -> Tensor[H]:
    h, c = kid
    return sigmoid(fx + dense(h, U_f)) * c

def cell(t: NTree) -> tuple[Tensor[H], Tensor[H]]:
    match t:
        case NNode(word, children):
            x = embed(E, word)
            kids = map(cell, children)
            i, o, u = split(dense(x, W_iou, b_iou) + dense(sum_h(kids), U_iou), 3)
            fc = sum_all(map(forget, kids, dense(x, W_f, b_f)))
            c = sigmoid(i) * tanh(u) + fc
            return sigmoid(o) * tanh(c), c

def main(t: NTree) -> Tensor[H]:
    h, c = cell(t)
    return h
'''

SIZES = {"tiny": {"H": 8, "V": 50}, "small": {"H": 256, "V": 1000}, "large": {"H": 512, "V": 1000}}
DESCRIPTION = "Child-sum TreeLSTM over n-ary trees (Tai et al. 2015)"
FEATURES = ("recursion over n-ary trees", "parallel map over children", "child-sum")
DEFAULT_DATA = "SST-like word counts as random trees with 1..4 children per node (data.nary_tree)"
DECISIONS = ("tensor",)


def source(decisions: str = "tensor") -> str:
    """The program text (no tensor-dependent decisions, so one mode)."""
    return SOURCE


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` random n-ary trees of SST-like size."""
    rng = np.random.default_rng(seed)
    return [data.nary_tree(rng, sizes["V"]) for _ in range(n)]


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """Word ids must lie in the vocabulary."""
    return data.check_token_ids(instance, sizes["V"], "word id")
