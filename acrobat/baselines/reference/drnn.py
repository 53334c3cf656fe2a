"""DRNN tree generation in plain NumPy (recursion depth is bounded by MAX_DEPTH * MAX_WIDTH)."""

from __future__ import annotations

import numpy as np

from acrobat.baselines.reference import sigmoid

MAX_DEPTH, MAX_WIDTH = 4, 3
T_CHILDREN, T_NEXT_SIBLING = 0.3, 0.4  # tensor-mode thresholds on the probabilities
P_CHILDREN, P_NEXT_SIBLING = 850, 700  # random-mode per-mille probabilities
MOD = 2**31


def _mix(x: int) -> int:
    x = (x * 1103515245 + 12345) % MOD
    x = (x + x // 65536) % MOD
    return (x * x // 1024 + x + 2654435761) % MOD


def _derive(seed: int, salt: int) -> int:
    return _mix(_mix((seed * 4 + salt) % MOD))


def generate(params, instance, decisions="tensor") -> tuple[np.ndarray, int, list]:
    """(sum of node states, node count, [(depth, width), ...] in pre-order)."""
    U_a, U_f, b, W_down, W_right, W_p, b_p = (
        params[k] for k in ("U_a", "U_f", "b", "W_down", "W_right", "W_p", "b_p")
    )
    shape: list[tuple[int, int]] = []

    def expand(a, f, depth, width, seed):
        h = np.tanh(U_a @ a + (U_f @ f + b))
        shape.append((depth, width))
        if decisions == "tensor":
            p = sigmoid(W_p @ h + b_p)
            more_depth, more_width = float(p[0]) > T_CHILDREN, float(p[1]) > T_NEXT_SIBLING
        else:
            more_depth = _derive(seed, 0) * 1000 // MOD < P_CHILDREN
            more_width = _derive(seed, 1) * 1000 // MOD < P_NEXT_SIBLING
        total, count = h, 1
        if more_depth and depth < MAX_DEPTH:
            a_child = np.tanh(W_down @ h)
            hc, nc = expand(a_child, np.zeros_like(h), depth + 1, 1, _derive(seed, 2))
            total, count = total + hc, count + nc
        if more_width and width < MAX_WIDTH:
            hs, ns = expand(a, np.tanh(W_right @ h), depth, width + 1, _derive(seed, 3))
            total, count = total + hs, count + ns
        return total, count

    seed = instance[2] if decisions == "random" else 0
    total, count = expand(instance[0], instance[1], 1, MAX_WIDTH, seed)
    return total, count, shape


def reference(params, instance, sizes, decisions="tensor") -> tuple[np.ndarray, int]:
    """(sum of the generated nodes' states, number of nodes)."""
    total, count, _ = generate(params, instance, decisions)
    return total, count
