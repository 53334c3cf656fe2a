"""Child-sum TreeLSTM in plain NumPy (explicit post-order stack: no recursion limit)."""

from __future__ import annotations

import numpy as np

from acrobat.baselines.reference import sigmoid
from acrobat.ir.values import to_list


def reference(params, tree, sizes, decisions="tensor") -> np.ndarray:
    """h at the root."""
    p = params
    zero = np.zeros(sizes["H"], np.float32)
    results: list[tuple[np.ndarray, np.ndarray]] = []
    stack = [(tree, False)]
    while stack:
        t, done = stack.pop()
        word, children = t.fields[0], to_list(t.fields[1])
        if not done:
            stack.append((t, True))
            stack += [(k, False) for k in reversed(children)]
            continue
        kids = results[len(results) - len(children) :]
        del results[len(results) - len(children) :]
        x = p["E"][word]
        h_sum = sum((h for h, _ in kids), zero)
        i, o, u = np.split(p["W_iou"] @ x + p["b_iou"] + p["U_iou"] @ h_sum, 3)
        fx = p["W_f"] @ x + p["b_f"]
        fc = sum((sigmoid(fx + p["U_f"] @ h) * c for h, c in kids), zero)
        c = sigmoid(i) * np.tanh(u) + fc
        results.append((sigmoid(o) * np.tanh(c), c))
    return results[0][0]
