"""MV-RNN (Socher et al., EMNLP 2012): matrix-vector recursive network over binary parse trees.

Every node carries a vector ``a`` in R^H and a matrix ``A`` in R^{H x H}. A leaf reads
both from the word: ``a = E[w]`` and ``A = reshape(EM[w], (H, H))``. A node with children
``(a, A)`` and ``(b, B)`` lets each child's matrix act on the other's vector::

    p = tanh(W [B a; A b] + b_W)          W   : [H, 2H]
    P = W_M [A; B]                        W_M : [H, 2H], so P is H x H

The two subtrees are independent (``parallel``); ``main`` returns ``p`` at the root.
As in the paper, word matrices start as the identity plus small noise, and ``W_M`` as
``[I I] / 2`` plus small noise (see :func:`init_params`), so matrices stay near the
identity at any depth. ACRoBat's artifact evaluates it at H = 64 / 128 on SST-like trees.
"""

import numpy as np

from acrobat.ir.nodes import Module
from acrobat.ir.values import init_params as uniform_params
from acrobat.models import data

SOURCE = '''\
"""MV-RNN (Socher et al. 2012): each node has a vector and an H x H matrix."""
H = Size("H", 64)
V = Size("V", 1000)
E: Param[V, H]
EM: Param[V, H * H]
W: Param[H, 2 * H]
b_W: Param[H]
W_M: Param[H, 2 * H]

class Tree(ADT):
    Leaf: (int,)
    Node: (Tree, Tree)

def compose(t: Tree) -> tuple[Tensor[H], Tensor[H, H]]:
    match t:
        case Leaf(word):
            return embed(E, word), reshape(embed(EM, word), (H, H))
        case Node(left, right):
            (a, A), (b, B) = parallel(compose(left), compose(right))
            p = tanh(dense(concat(B @ a, A @ b), W, b_W))
            return p, W_M @ concat(A, B, axis=0)

def main(t: Tree) -> Tensor[H]:
    p, P = compose(t)
    return p
'''

SIZES = {"tiny": {"H": 4, "V": 50}, "small": {"H": 64, "V": 1000}, "large": {"H": 128, "V": 1000}}
DESCRIPTION = "MV-RNN: a vector and an H x H matrix per tree node (Socher et al. 2012)"
FEATURES = ("recursion over trees", "parallel children", "matrix-valued node state")
DEFAULT_DATA = "SST-like binary parse trees of word ids (data.sst_tree)"
DECISIONS = ("tensor",)
NOISE = 0.01  # scale of the uniform noise around the identity initialisations


def source(decisions: str = "tensor") -> str:
    """The program text (no tensor-dependent decisions, so one mode)."""
    return SOURCE


def init_params(module: Module, seed: int, sizes: dict) -> dict[str, np.ndarray]:
    """Uniform weights, but word matrices near I and ``W_M`` near ``[I I] / 2`` (the paper's)."""
    params = uniform_params(module, seed)
    h, v = sizes["H"], sizes["V"]
    rng = np.random.default_rng([seed, 1])
    eye = np.eye(h, dtype=np.float32)
    params["EM"] = (eye.reshape(1, h * h) + rng.uniform(-NOISE, NOISE, (v, h * h))).astype(
        np.float32
    )
    params["W_M"] = (0.5 * np.hstack([eye, eye]) + rng.uniform(-NOISE, NOISE, (h, 2 * h))).astype(
        np.float32
    )
    return params


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` SST-like trees."""
    rng = np.random.default_rng(seed)
    return [data.sst_tree(rng, sizes["V"]) for _ in range(n)]


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """Word ids must lie in the vocabulary."""
    return data.check_tree_words(instance, sizes["V"])
