"""Berxit (BERT-style encoder with early exit) in plain NumPy, one instance at a time."""

from __future__ import annotations

import math

import numpy as np

LAYERS, THRESHOLD = 6, 0.8


def _layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def _layer(p, k: int, x: np.ndarray, hd: int) -> np.ndarray:
    s, d = x.shape
    nh = d // hd
    qkv = x @ p[f"W_qkv_{k}"].T + p[f"b_qkv_{k}"]
    q, kk, v = (t.reshape(s, nh, hd).transpose(1, 0, 2) for t in np.split(qkv, 3, axis=1))
    scores = q @ kk.transpose(0, 2, 1) * np.float32(hd**-0.5)
    context = (_softmax(scores) @ v).transpose(1, 0, 2).reshape(s, d)
    y = _layer_norm(
        x + context @ p[f"W_o_{k}"].T + p[f"b_o_{k}"], p[f"g_att_{k}"], p[f"be_att_{k}"]
    )
    ffn = _gelu(y @ p[f"W_1_{k}"].T + p[f"b_1_{k}"]) @ p[f"W_2_{k}"].T + p[f"b_2_{k}"]
    return _layer_norm(y + ffn, p[f"g_ffn_{k}"], p[f"be_ffn_{k}"])


def reference(params, instance, sizes, decisions="tensor") -> tuple[np.ndarray, int]:
    """(final-classifier logits on the first token, number of layers used)."""
    x, exit_layer = (instance, None) if decisions == "tensor" else instance
    h, k = x, 0
    for k in range(1, LAYERS + 1):
        h = _layer(params, k, h, sizes["HD"])
        if k == LAYERS:
            break
        if decisions == "random":
            if k == exit_layer:
                break
        elif _softmax(h[0] @ params[f"W_exit_{k}"].T + params[f"b_exit_{k}"]).max() > THRESHOLD:
            break
    return h[0] @ params["W_cls"].T + params["b_cls"], k
