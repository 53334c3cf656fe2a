"""Binary TreeLSTM in plain NumPy (explicit stack: no recursion limit)."""

from __future__ import annotations

import numpy as np

from acrobat.baselines.reference import sigmoid


def reference(params, tree, sizes, decisions="tensor") -> np.ndarray:
    """h at the root."""
    E, W, b, U, bU = (params[k] for k in ("E", "W_iou", "b_iou", "U", "b_U"))
    results: list[tuple[np.ndarray, np.ndarray]] = []
    stack = [(tree, False)]
    while stack:
        t, done = stack.pop()
        if t.ctor == "Leaf":
            i, o, u = np.split(W @ E[t.fields[0]] + b, 3)
            c = sigmoid(i) * np.tanh(u)
            results.append((sigmoid(o) * np.tanh(c), c))
        elif done:
            (hr, cr), (hl, cl) = results.pop(), results.pop()
            i, o, u, fl, fr = np.split(U @ np.concatenate([hl, hr]) + bU, 5)
            c = sigmoid(i) * np.tanh(u) + sigmoid(fl) * cl + sigmoid(fr) * cr
            results.append((sigmoid(o) * np.tanh(c), c))
        else:
            stack += [(t, True), (t.fields[1], False), (t.fields[0], False)]
    return results[0][0]
