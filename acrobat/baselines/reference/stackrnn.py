"""StackRNN (shift-reduce composition) in plain NumPy with a Python list as the stack."""

from __future__ import annotations

import numpy as np

from acrobat.baselines.reference import sigmoid
from acrobat.ir.values import to_list

SHIFT, REDUCE = 0, 1
THRESHOLD = 0.5


def parse(params, tokens: list[int], transitions: list[int] | None = None):
    """(final state, transitions taken); predicts them when ``transitions`` is None."""
    E, W_s, U_s, b_s, W_r, b_r, w_t = (
        params[k] for k in ("E", "W_s", "U_s", "b_s", "W_r", "b_r", "w_t")
    )
    h = E.shape[1]
    stack: list[np.ndarray] = []  # top last
    buffer = list(tokens)
    taken: list[int] = []
    given = iter(transitions) if transitions is not None else None
    while buffer or len(stack) > 1:
        if given is not None:
            t = next(given, None)
            if t is None:
                break
        elif buffer and (len(stack) < 2 or float(sigmoid(w_t @ stack[-1])[0]) < THRESHOLD):
            t = SHIFT
        else:
            t = REDUCE
        if t == SHIFT:
            top = stack[-1] if stack else np.zeros(h, np.float32)
            stack.append(np.tanh(W_s @ E[buffer.pop(0)] + (U_s @ top + b_s)))
        else:
            right, left = stack.pop(), stack.pop()
            stack.append(np.tanh(W_r @ np.concatenate([left, right]) + b_r))
        taken.append(t)
    return stack[-1], taken


def reference(params, instance, sizes, decisions="tensor") -> np.ndarray:
    """The single state left on the stack."""
    if decisions == "tensor":
        return parse(params, to_list(instance))[0]
    tokens, transitions = instance
    return parse(params, to_list(tokens), to_list(transitions))[0]
