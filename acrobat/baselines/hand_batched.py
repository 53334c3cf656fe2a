"""Hand-batched NumPy TreeLSTM and BiRNN: what a careful engineer writes without a
scheduler — the practical limit for these kernels on a CPU.

TreeLSTM: all leaves of all trees in one batch, then internal nodes level by level
(a node's level is its height, so both children are ready), gathering children's
states by index from one node table. BiRNN: time step by time step over the sequences
still running (longest first), forward and backward, then the classifier over every
token at once. Same equations, weights and float32 as the references.
"""

from __future__ import annotations

import numpy as np

from acrobat.ir.values import AdtValue, from_list, to_list


def _sigmoid(x: np.ndarray) -> np.ndarray:
    np.negative(x, out=x)
    np.exp(x, out=x)
    x += 1.0
    return np.reciprocal(x, out=x)


def treelstm(params: dict[str, np.ndarray], trees: list[AdtValue]) -> list[np.ndarray]:
    """h at each root (the binary TreeLSTM of acrobat.models.treelstm)."""
    E, W, b, U, bU = (params[k] for k in ("E", "W_iou", "b_iou", "U", "b_U"))
    H = E.shape[1]
    words, left, right, height, roots = [], [], [], [], []
    for t in trees:  # post-order numbering with an explicit stack
        stack = [(t, False)]
        ids: list[int] = []
        while stack:
            node, done = stack.pop()
            if node.ctor == "Leaf":
                ids.append(len(words))
                words.append(node.fields[0])
                left.append(-1)
                right.append(-1)
                height.append(0)
            elif done:
                r, lft = ids.pop(), ids.pop()
                ids.append(len(words))
                words.append(-1)
                left.append(lft)
                right.append(r)
                height.append(max(height[lft], height[r]) + 1)
            else:
                stack += [(node, True), (node.fields[1], False), (node.fields[0], False)]
        roots.append(ids[0])
    words, left, right, height = (np.asarray(a) for a in (words, left, right, height))
    n = len(words)
    h = np.empty((n, H), np.float32)
    c = np.empty((n, H), np.float32)
    leaves = np.flatnonzero(height == 0)
    g = E[words[leaves]] @ W.T
    g += b
    i, o, u = g[:, :H], g[:, H : 2 * H], g[:, 2 * H :]
    cl = _sigmoid(i.copy()) * np.tanh(u)
    c[leaves] = cl
    h[leaves] = _sigmoid(o.copy()) * np.tanh(cl)
    for level in range(1, int(height.max()) + 1 if n else 1):
        nodes = np.flatnonzero(height == level)
        lft, rgt = left[nodes], right[nodes]
        x = np.concatenate([h[lft], h[rgt]], axis=1)
        g = x @ U.T
        g += bU
        i, o, u, fl, fr = (g[:, k * H : (k + 1) * H] for k in range(5))
        cn = _sigmoid(i.copy()) * np.tanh(u)
        cn += _sigmoid(fl.copy()) * c[lft]
        cn += _sigmoid(fr.copy()) * c[rgt]
        c[nodes] = cn
        h[nodes] = _sigmoid(o.copy()) * np.tanh(cn)
    return [h[r].copy() for r in roots]


def _rnn(xs: list[np.ndarray], W, U, b) -> list[np.ndarray]:
    """States of every sequence, time step by time step (sequences sorted by length)."""
    H = U.shape[0]
    lengths = np.array([len(x) for x in xs])
    order = np.argsort(-lengths, kind="stable")
    out = [np.empty((n, H), np.float32) for n in lengths]
    h = np.zeros((len(xs), H), np.float32)
    for t in range(int(lengths.max()) if len(xs) else 0):
        live = order[lengths[order] > t]
        x = np.stack([xs[j][t] for j in live])
        hn = np.tanh(x @ W.T + b + h[live] @ U.T)
        h[live] = hn
        for k, j in enumerate(live):
            out[j][t] = hn[k]
    return out


def birnn(params: dict[str, np.ndarray], sequences: list[AdtValue]) -> list[AdtValue]:
    """Per-token logits (a List per instance), as acrobat.models.birnn."""
    p = params
    toks = [np.asarray(to_list(s), np.int64) for s in sequences]
    xs = [p["E"][t] for t in toks]
    fs = _rnn(xs, p["W_fw"], p["U_fw"], p["b_fw"])
    bs = [s[::-1] for s in _rnn([x[::-1] for x in xs], p["W_bw"], p["U_bw"], p["b_bw"])]
    out = []
    if toks:
        allf = np.concatenate(fs) if sum(map(len, fs)) else np.zeros((0, p["U_fw"].shape[0]))
        allb = np.concatenate(bs) if sum(map(len, bs)) else allf
        logits = np.concatenate([allf, allb], axis=1) @ p["W_c"].T + p["b_c"]
        k = 0
        for t in toks:
            out.append(from_list(list(logits[k : k + len(t)].astype(np.float32))))
            k += len(t)
    return out


HAND_BATCHED = {"treelstm": treelstm, "birnn": birnn}
