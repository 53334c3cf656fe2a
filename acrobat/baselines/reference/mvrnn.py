"""MV-RNN in plain NumPy (explicit stack: no recursion limit)."""

from __future__ import annotations

import numpy as np


def reference(params, tree, sizes, decisions="tensor") -> np.ndarray:
    """The vector ``p`` at the root."""
    E, EM, W, bW, WM = (params[k] for k in ("E", "EM", "W", "b_W", "W_M"))
    h = sizes["H"]
    results: list[tuple[np.ndarray, np.ndarray]] = []
    stack = [(tree, False)]
    while stack:
        t, done = stack.pop()
        if t.ctor == "Leaf":
            w = t.fields[0]
            results.append((E[w], EM[w].reshape(h, h)))
        elif done:
            (b, B), (a, A) = results.pop(), results.pop()
            p = np.tanh(W @ np.concatenate([B @ a, A @ b]) + bW)
            results.append((p, WM @ np.vstack([A, B])))
        else:
            stack += [(t, True), (t.fields[1], False), (t.fields[0], False)]
    return results[0][0]
