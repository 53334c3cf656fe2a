"""BiRNN (Schuster & Paliwal, 1997) with a per-token classifier, as in ACRoBat's artifact.

Tokens are embedded (``x_t = E[w_t]``, a parallel ``map``). A forward and a backward
Elman RNN, each with its own weights but the same cell::

    h_t = tanh(W x_t + U h_{t-1} + b),   h_0 = 0

run over the sequence independently (``parallel``): the forward one left to right, the
backward one over the reversed list, its states re-reversed so that ``f_t`` and ``b_t``
both belong to token ``t``. After a ``phase()`` a classifier maps every token to 16 logits,
``y_t = W_c [f_t; b_t] + b_c`` (a parallel ``map``). ``main`` returns the list of logits.
The empty sequence is a valid input (its output is the empty list).
"""

import numpy as np

from acrobat.models import data

SOURCE = '''\
"""BiRNN: forward and backward RNNs in parallel, a phase, then a per-token classifier."""
H = Size("H", 256)
V = Size("V", 1000)
C = 16
E: Param[V, H]
W_fw: Param[H, H]
U_fw: Param[H, H]
b_fw: Param[H]
W_bw: Param[H, H]
U_bw: Param[H, H]
b_bw: Param[H]
W_c: Param[C, 2 * H]
b_c: Param[C]

def word(w: int) -> Tensor[H]:
    return embed(E, w)

def cell(x: Tensor[H], h: Tensor[H], W: Tensor[H, H], U: Tensor[H, H], b: Tensor[H]) -> Tensor[H]:
    return tanh(dense(x, W, b) + dense(h, U))

def rnn(
    xs: List[Tensor[H]], h: Tensor[H], W: Tensor[H, H], U: Tensor[H, H], b: Tensor[H]
) -> List[Tensor[H]]:
    match xs:
        case Nil():
            return Nil()
        case Cons(x, rest):
            h_next = cell(x, h, W, U, b)
            return Cons(h_next, rnn(rest, h_next, W, U, b))

def reverse(xs: List[Tensor[H]], acc: List[Tensor[H]]) -> List[Tensor[H]]:
    match xs:
        case Nil():
            return acc
        case Cons(x, rest):
            return reverse(rest, Cons(x, acc))

def forward(xs: List[Tensor[H]]) -> List[Tensor[H]]:
    return rnn(xs, zeros(H), W_fw, U_fw, b_fw)

def backward(xs: List[Tensor[H]]) -> List[Tensor[H]]:
    return reverse(rnn(reverse(xs, Nil()), zeros(H), W_bw, U_bw, b_bw), Nil())

def pair_up(
    fs: List[Tensor[H]], bs: List[Tensor[H]]
) -> List[tuple[Tensor[H], Tensor[H]]]:
    match fs:
        case Nil():
            return Nil()
        case Cons(f, f_rest):
            match bs:
                case Nil():
                    return Nil()
                case Cons(b, b_rest):
                    return Cons((f, b), pair_up(f_rest, b_rest))

def classify(state: tuple[Tensor[H], Tensor[H]]) -> Tensor[C]:
    f, b = state
    return dense(concat(f, b), W_c, b_c)

def main(tokens: List[int]) -> List[Tensor[C]]:
    xs = map(word, tokens)
    fs, bs = parallel(forward(xs), backward(xs))
    phase()
    return map(classify, pair_up(fs, bs))
'''

SIZES = {"tiny": {"H": 8, "V": 50}, "small": {"H": 256, "V": 1000}, "large": {"H": 512, "V": 1000}}
DESCRIPTION = "BiRNN: forward and backward RNNs in parallel, then a per-token 16-way classifier"
FEATURES = ("list recursion", "parallel RNNs", "parallel map", "phase")
DEFAULT_DATA = "token-id sequences of SST-like lengths 1..55 (data.token_sequence)"
DECISIONS = ("tensor",)


def source(decisions: str = "tensor") -> str:
    """The program text (no tensor-dependent decisions, so one mode)."""
    return SOURCE


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` token sequences of SST-like lengths."""
    rng = np.random.default_rng(seed)
    return [data.token_sequence(rng, sizes["V"]) for _ in range(n)]


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """Token ids must lie in the vocabulary."""
    return data.check_token_ids(instance, sizes["V"])
