"""BiRNN with a per-token classifier in plain NumPy (loops over the tokens)."""

from __future__ import annotations

import numpy as np

from acrobat.ir.values import AdtValue, from_list, to_list


def _states(xs: list[np.ndarray], W, U, b) -> list[np.ndarray]:
    h = np.zeros(U.shape[0], np.float32)
    out = []
    for x in xs:
        h = np.tanh(W @ x + b + U @ h)
        out.append(h)
    return out


def reference(params, tokens, sizes, decisions="tensor") -> AdtValue:
    """A ``List`` of 16 logits per token."""
    p = params
    xs = [p["E"][w] for w in to_list(tokens)]
    fs = _states(xs, p["W_fw"], p["U_fw"], p["b_fw"])
    bs = _states(xs[::-1], p["W_bw"], p["U_bw"], p["b_bw"])[::-1]
    return from_list([p["W_c"] @ np.concatenate([f, b]) + p["b_c"] for f, b in zip(fs, bs)])
