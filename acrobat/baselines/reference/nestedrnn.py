"""NestedRNN in plain NumPy (two nested loops)."""

from __future__ import annotations

import numpy as np

from acrobat.baselines.reference import sigmoid
from acrobat.ir.values import to_list


def reference(params, graph, sizes, decisions="tensor") -> np.ndarray:
    """The outer GRU state after the last node."""
    p = params
    h = np.zeros(sizes["H"], np.float32)
    for node in to_list(graph):
        x = h
        for edge in to_list(node):
            x = np.tanh(p["W_e"] @ p["E"][edge] + p["b_e"] + p["U_e"] @ x)
        z = sigmoid(p["W_z"] @ x + p["b_z"] + p["U_z"] @ h)
        r = sigmoid(p["W_r"] @ x + p["b_r"] + p["U_r"] @ h)
        n = np.tanh(p["W_n"] @ x + p["b_n"] + p["U_n"] @ (r * h))
        h = (1.0 - z) * n + z * h
    return h
