"""StackRNN: a shift-reduce composition model over a stack of states (SPINN-like).

A sentence of token ids is read into a stack of hidden states (``List[Tensor[H]]``, top
first) by a sequence of transitions::

    SHIFT   push  tanh(W_s E[token] + U_s top + b_s)    top = the stack top, or 0 if empty
    REDUCE  pop right, pop left, push  tanh(W_r [left; right] + b_r)

and the output is the single state left at the end. With ``decisions="random"`` (the
paper's emulation) the transitions are GIVEN: the instance is ``(tokens, transitions)``
with a uniformly random valid sequence (``data.shift_reduce``; 0 = SHIFT, 1 = REDUCE).
With the default ``decisions="tensor"`` the parser PREDICTS them from its own state::

    p = sigmoid(w_t . top)                     # item(...) on the host
    SHIFT  if tokens remain and (fewer than 2 states or p < 0.5)
    REDUCE otherwise; stop when no tokens remain and one state is left

``p`` is only read when the choice is open (tokens remain and two or more states are on
the stack), so the program never reads a tensor it does not need; the decisions are the
same as reading ``p`` at every step (with a zero state for an empty stack).

Initialisation (``init_params``): the generic uniform +-1/sqrt(fan_in) weights, except
``w_t`` which is N(0, 4 / H) so ``w_t . top`` spreads over about +-1 and the 0.5
threshold splits the open choices between SHIFT and REDUCE (measured in the tests).
"""

import numpy as np

from acrobat.ir.values import from_list, to_list
from acrobat.models import data

_HEADER = '''\
"""StackRNN: shift-reduce composition over a stack of states (decisions: {mode})."""
H = Size("H", 256)
V = Size("V", 1000)
E: Param[V, H]
W_s: Param[H, H]
U_s: Param[H, H]
b_s: Param[H]
W_r: Param[H, 2 * H]
b_r: Param[H]
w_t: Param[1, H]

def top(stack: List[Tensor[H]]) -> Tensor[H]:
    match stack:
        case Cons(h, _):
            return h
        case Nil():
            return zeros(H)

def shift(token: int, stack: List[Tensor[H]]) -> List[Tensor[H]]:
    h = tanh(dense(embed(E, token), W_s) + dense(top(stack), U_s, b_s))
    return Cons(h, stack)

def reduce(stack: List[Tensor[H]]) -> List[Tensor[H]]:
    match stack:
        case Cons(right, Cons(left, rest)):
            return Cons(tanh(dense(concat(left, right), W_r, b_r)), rest)
        case _:
            return stack
'''

_TENSOR = '''
def parse(tokens: List[int], stack: List[Tensor[H]], depth: int) -> Tensor[H]:
    """Run transitions until the tokens are read and one state is left (depth = its size)."""
    match tokens:
        case Cons(token, rest):
            if depth >= 2:
                if item(sigmoid(dense(top(stack), w_t))) >= 0.5:
                    return parse(tokens, reduce(stack), depth - 1)
            return parse(rest, shift(token, stack), depth + 1)
        case Nil():
            if depth <= 1:
                return top(stack)
            return parse(tokens, reduce(stack), depth - 1)

def main(tokens: List[int]) -> Tensor[H]:
    return parse(tokens, Nil(), 0)
'''

_RANDOM = '''
def parse(tokens: List[int], transitions: List[int], stack: List[Tensor[H]]) -> Tensor[H]:
    """Run the given transitions: 0 = SHIFT, 1 = REDUCE."""
    match transitions:
        case Nil():
            return top(stack)
        case Cons(t, later):
            if t == 1:
                return parse(tokens, later, reduce(stack))
            match tokens:
                case Cons(token, rest):
                    return parse(rest, later, shift(token, stack))
                case Nil():
                    return top(stack)

def main(tokens: List[int], transitions: List[int]) -> Tensor[H]:
    return parse(tokens, transitions, Nil())
'''

SOURCE = _HEADER.format(mode="tensor") + _TENSOR
SOURCE_RANDOM = _HEADER.format(mode="random") + _RANDOM

SIZES = {"tiny": {"H": 8, "V": 50}, "small": {"H": 256, "V": 1000}, "large": {"H": 512, "V": 1000}}
DESCRIPTION = "Shift-reduce composition over a stack of states (StackRNN, SPINN-like)"
FEATURES = (
    "stack as a list (push/pop by recursion)",
    "tensor-dependent SHIFT/REDUCE decisions (item)",
    "transition sequence as input (random mode)",
)
DEFAULT_DATA = "SST-like token sequences (+ a random valid transition sequence in random mode)"
DECISIONS = ("tensor", "random")
TRANSITION_GAIN = 2.0


def source(decisions: str = "tensor") -> str:
    """The program text for one decisions mode."""
    return SOURCE if decisions == "tensor" else SOURCE_RANDOM


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` SST-like token lists; in random mode each with a random valid transition list."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        tokens = data.token_sequence(rng, sizes["V"])
        if decisions == "tensor":
            out.append(tokens)
        else:
            ts = data.shift_reduce(rng, len(to_list(tokens)))
            out.append((tokens, from_list(ts)))
    return out


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """At least one token, ids in the vocabulary, and (random mode) valid transitions."""
    tokens = to_list(instance if decisions == "tensor" else instance[0])
    if not tokens:
        return "the token sequence is empty (a parse needs at least one token)"
    for i, w in enumerate(tokens):
        if not 0 <= w < sizes["V"]:
            return f"token {i}: id {w} is outside the vocabulary [0, {sizes['V']})"
    if decisions == "random":
        return data.valid_transitions(to_list(instance[1]), len(tokens))
    return None


def init_params(module, seed: int, sizes: dict) -> dict[str, np.ndarray]:
    """N(0, 1) embeddings, uniform +-1/sqrt(fan_in) matrices, zero biases, a wider ``w_t``."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in module.params:
        shape = p.ty.shape
        if p.name == "E":
            out[p.name] = rng.standard_normal(shape).astype(np.float32)
        elif p.name == "w_t":
            scale = TRANSITION_GAIN / np.sqrt(shape[1])
            out[p.name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        elif len(shape) == 1:
            out[p.name] = np.zeros(shape, np.float32)
        else:
            bound = 1.0 / np.sqrt(shape[1])
            out[p.name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    return out
