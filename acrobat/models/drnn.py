"""DRNN: doubly-recurrent tree generation (Alvarez-Melis & Jaakkola, ICLR 2017).

A tree is *generated* top-down from two root vectors. Every node receives an ancestral
input ``a`` (from its parent) and a fraternal input ``f`` (from its previous sibling)::

    h        = tanh(U_a a + U_f f + b)
    p_child  = sigmoid(W_p h + b_p)[0]      # "has children"       (ancestral stop decision)
    p_next   = sigmoid(W_p h + b_p)[1]      # "has a next sibling" (fraternal stop decision)

    has_children     = p_child > 0.3 and depth < MAX_DEPTH
    has_next_sibling = p_next  > 0.4 and width < MAX_WIDTH

The first child gets ``a = tanh(W_down h)`` and ``f = 0``; the next sibling gets this
node's ``a`` and ``f = tanh(W_right h)``. A node's subtree and its younger siblings are
independent (``parallel``). The output is ``(sum of all node states, number of nodes)``,
so it depends on the generated shape. The root has depth 1 and no siblings;
``MAX_DEPTH = 4`` and ``MAX_WIDTH = 3`` cap a tree at 1 + 3 + 9 + 27 = 40 nodes.

The paper's ACRoBat artifact emulates the stop decisions with random draws; here the
default ``decisions="tensor"`` reads them from the tensors with ``item(...)``, and
``decisions="random"`` reproduces the emulation: the instance carries a host int seed and
each node derives its two decisions, and the seeds of its first child and next sibling,
from its own seed with a
small integer hash written in the language's host int arithmetic (so the decisions are
independent of the order in which ``parallel`` branches run).

Initialisation (``init_params``): the four recurrent matrices are N(0, 1.5^2 / H) so the
states do not fade with depth, W_p is N(0, 1 / H), and every bias starts at zero. With
zero biases the network is odd in its inputs, so over the Gaussian root vectors each
``p`` is symmetric around 0.5. The thresholds 0.3 / 0.4 make most decisions "yes"
(about 90% / 85% over the generated nodes) and give trees of 1 to 40 nodes: over 200
instances, mean 16, about 20% single roots and 30+ distinct sizes at tiny and at small.
The random mode draws "yes" with per-mille probabilities 850 / 700 (mean 13 nodes).
"""

import numpy as np

from acrobat.models import data

HEADER = '''\
"""DRNN (Alvarez-Melis & Jaakkola 2017): doubly-recurrent tree generation, decisions: {mode}."""
H = Size("H", 256)
MAX_DEPTH = 4
MAX_WIDTH = 3
U_a: Param[H, H]
U_f: Param[H, H]
b: Param[H]
W_down: Param[H, H]
W_right: Param[H, H]
W_p: Param[2, H]
b_p: Param[2]
'''

TENSOR_BODY = '''
def first_child(h: Tensor[H], depth: int) -> tuple[Tensor[H], int]:
    return expand(tanh(dense(h, W_down)), zeros(H), depth + 1, 1)

def next_sibling(a: Tensor[H], h: Tensor[H], depth: int, width: int) -> tuple[Tensor[H], int]:
    return expand(a, tanh(dense(h, W_right)), depth, width + 1)

def expand(a: Tensor[H], f: Tensor[H], depth: int, width: int) -> tuple[Tensor[H], int]:
    """This node, its subtree and its younger siblings: (sum of states, node count)."""
    h = tanh(dense(a, U_a) + dense(f, U_f, b))
    p = sigmoid(dense(h, W_p, b_p))
    has_children = item(p[0:1]) > 0.3 and depth < MAX_DEPTH
    has_next_sibling = item(p[1:2]) > 0.4 and width < MAX_WIDTH
    if has_children and has_next_sibling:
        (hc, nc), (hs, ns) = parallel(first_child(h, depth), next_sibling(a, h, depth, width))
        return h + hc + hs, 1 + nc + ns
    if has_children:
        hc, nc = first_child(h, depth)
        return h + hc, 1 + nc
    if has_next_sibling:
        hs, ns = next_sibling(a, h, depth, width)
        return h + hs, 1 + ns
    return h, 1

def main(root_a: Tensor[H], root_f: Tensor[H]) -> tuple[Tensor[H], int]:
    return expand(root_a, root_f, 1, MAX_WIDTH)
'''

RANDOM_BODY = '''
MOD = 2147483648
P_CHILDREN = 850
P_NEXT_SIBLING = 700

def mix(x: int) -> int:
    """One round of a small integer hash on [0, 2**31); products stay below 2**63."""
    x = (x * 1103515245 + 12345) % MOD
    x = (x + x // 65536) % MOD
    return (x * x // 1024 + x + 2654435761) % MOD

def derive(seed: int, salt: int) -> int:
    """Stream `salt` of a node's seed: 0, 1 = its decisions, 2, 3 = its relatives' seeds."""
    return mix(mix((seed * 4 + salt) % MOD))

def first_child(h: Tensor[H], depth: int, seed: int) -> tuple[Tensor[H], int]:
    return expand(tanh(dense(h, W_down)), zeros(H), depth + 1, 1, derive(seed, 2))

def next_sibling(
    a: Tensor[H], h: Tensor[H], depth: int, width: int, seed: int
) -> tuple[Tensor[H], int]:
    return expand(a, tanh(dense(h, W_right)), depth, width + 1, derive(seed, 3))

def expand(
    a: Tensor[H], f: Tensor[H], depth: int, width: int, seed: int
) -> tuple[Tensor[H], int]:
    """As in the tensor mode, but each decision is a per-mille draw from the node's seed."""
    h = tanh(dense(a, U_a) + dense(f, U_f, b))
    has_children = derive(seed, 0) * 1000 // MOD < P_CHILDREN and depth < MAX_DEPTH
    has_next_sibling = derive(seed, 1) * 1000 // MOD < P_NEXT_SIBLING and width < MAX_WIDTH
    if has_children and has_next_sibling:
        (hc, nc), (hs, ns) = parallel(
            first_child(h, depth, seed), next_sibling(a, h, depth, width, seed)
        )
        return h + hc + hs, 1 + nc + ns
    if has_children:
        hc, nc = first_child(h, depth, seed)
        return h + hc, 1 + nc
    if has_next_sibling:
        hs, ns = next_sibling(a, h, depth, width, seed)
        return h + hs, 1 + ns
    return h, 1

def main(root_a: Tensor[H], root_f: Tensor[H], seed: int) -> tuple[Tensor[H], int]:
    return expand(root_a, root_f, 1, MAX_WIDTH, seed)
'''

SOURCE = HEADER.format(mode="tensor") + TENSOR_BODY
SOURCE_RANDOM = HEADER.format(mode="random") + RANDOM_BODY

SIZES = {"tiny": {"H": 8}, "small": {"H": 256}, "large": {"H": 512}}
DESCRIPTION = "Doubly-recurrent tree generation with per-node stop decisions (DRNN)"
FEATURES = (
    "tree generation by recursion",
    "tensor-dependent stop decisions (item)",
    "parallel child subtree and sibling chain",
)
DEFAULT_DATA = "two N(0, 1) root vectors per instance (+ a host seed in random mode)"
DECISIONS = ("tensor", "random")
SEED_LIMIT = 2**31
RECURRENT_GAIN = 1.5


def source(decisions: str = "tensor") -> str:
    """The program text for one decisions mode."""
    return SOURCE if decisions == "tensor" else SOURCE_RANDOM


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` pairs of N(0, 1) root vectors; in random mode also a seed in [0, 2**31)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a, f = data.gaussian(rng, (sizes["H"],)), data.gaussian(rng, (sizes["H"],))
        out.append((a, f) if decisions == "tensor" else (a, f, int(rng.integers(0, SEED_LIMIT))))
    return out


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """The random-mode seed must lie in [0, 2**31)."""
    if decisions == "random" and not 0 <= instance[2] < SEED_LIMIT:
        return f"seed {instance[2]} is outside [0, 2**31)"
    return None


def init_params(module, seed: int, sizes: dict) -> dict[str, np.ndarray]:
    """Gaussian weights (gain 1.5 on the recurrent matrices) and zero biases."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in module.params:
        shape = p.ty.shape
        if len(shape) == 1:
            out[p.name] = np.zeros(shape, np.float32)
            continue
        gain = 1.0 if p.name == "W_p" else RECURRENT_GAIN
        out[p.name] = (rng.standard_normal(shape) * gain / np.sqrt(shape[1])).astype(np.float32)
    return out
