"""TreeLSTM (Tai et al., 2015): the binary N-ary TreeLSTM over parse trees.

Leaves read a word embedding and compute the i, o, u gates with one projection;
internal nodes combine both children with ONE fused 5H x 2H projection of [h_l; h_r]
into i, o, u, f_l, f_r. The two subtrees are independent (``parallel``).
"""

import numpy as np

from acrobat.models import data

SOURCE = '''\
"""Binary TreeLSTM (Tai et al. 2015) over binary parse trees."""
H = Size("H", 256)
V = Size("V", 1000)
E: Param[V, H]
W_iou: Param[3 * H, H]
b_iou: Param[3 * H]
U: Param[5 * H, 2 * H]
b_U: Param[5 * H]

class Tree(ADT):
    Leaf: (int,)
    Node: (Tree, Tree)

def cell(t: Tree) -> tuple[Tensor[H], Tensor[H]]:
    match t:
        case Leaf(word):
            i, o, u = split(dense(embed(E, word), W_iou, b_iou), 3)
            c = sigmoid(i) * tanh(u)
            return sigmoid(o) * tanh(c), c
        case Node(left, right):
            (hl, cl), (hr, cr) = parallel(cell(left), cell(right))
            i, o, u, fl, fr = split(dense(concat(hl, hr), U, b_U), 5)
            c = sigmoid(i) * tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr
            return sigmoid(o) * tanh(c), c

def main(t: Tree) -> Tensor[H]:
    h, c = cell(t)
    return h
'''

SIZES = {"tiny": {"H": 8, "V": 50}, "small": {"H": 256, "V": 1000}, "large": {"H": 512, "V": 1000}}
DESCRIPTION = "Binary TreeLSTM over SST-like parse trees (Tai et al. 2015)"
FEATURES = ("recursion over trees", "parallel children")
DEFAULT_DATA = "SST-like binary parse trees of word ids (data.sst_tree)"
DECISIONS = ("tensor",)


def source(decisions: str = "tensor") -> str:
    """The program text (no tensor-dependent decisions, so one mode)."""
    return SOURCE


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` SST-like trees."""
    rng = np.random.default_rng(seed)
    return [data.sst_tree(rng, sizes["V"]) for _ in range(n)]


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """Word ids must lie in the vocabulary."""
    return data.check_tree_words(instance, sizes["V"])
