"""PyTorch eager, one instance at a time: what most users would write."""

from __future__ import annotations

import numpy as np

from acrobat.ir.values import AdtValue, to_list


def available() -> str | None:
    """None if PyTorch imports, else why not."""
    try:
        import torch  # noqa: F401
    except Exception as err:  # noqa: BLE001 - any import failure means "not installed"
        return f"not installed ({type(err).__name__})"
    return None


def _tensors(params):
    import torch

    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in params.items()}


def treelstm(params, trees: list[AdtValue]) -> list[np.ndarray]:
    """Binary TreeLSTM per instance (explicit stack, like the reference)."""
    import torch

    p = _tensors(params)
    E, W, b, U, bU = (p[k] for k in ("E", "W_iou", "b_iou", "U", "b_U"))
    out = []
    with torch.no_grad():
        for tree in trees:
            res = []
            stack = [(tree, False)]
            while stack:
                t, done = stack.pop()
                if t.ctor == "Leaf":
                    i, o, u = torch.chunk(W @ E[t.fields[0]] + b, 3)
                    c = torch.sigmoid(i) * torch.tanh(u)
                    res.append((torch.sigmoid(o) * torch.tanh(c), c))
                elif done:
                    (hr, cr), (hl, cl) = res.pop(), res.pop()
                    i, o, u, fl, fr = torch.chunk(U @ torch.cat([hl, hr]) + bU, 5)
                    c = (
                        torch.sigmoid(i) * torch.tanh(u)
                        + torch.sigmoid(fl) * cl
                        + torch.sigmoid(fr) * cr
                    )
                    res.append((torch.sigmoid(o) * torch.tanh(c), c))
                else:
                    stack += [(t, True), (t.fields[1], False), (t.fields[0], False)]
            out.append(res[0][0].numpy())
    return out


def birnn(params, sequences: list[AdtValue]) -> list[list[np.ndarray]]:
    """BiRNN + per-token classifier per instance."""
    import torch

    p = _tensors(params)
    out = []
    with torch.no_grad():
        for seq in sequences:
            xs = [p["E"][w] for w in to_list(seq)]

            def states(xs, W, U, b):
                h = torch.zeros(U.shape[0])
                hs = []
                for x in xs:
                    h = torch.tanh(W @ x + b + U @ h)
                    hs.append(h)
                return hs

            fs = states(xs, p["W_fw"], p["U_fw"], p["b_fw"])
            bs = states(xs[::-1], p["W_bw"], p["U_bw"], p["b_bw"])[::-1]
            out.append(
                [(p["W_c"] @ torch.cat([f, b_]) + p["b_c"]).numpy() for f, b_ in zip(fs, bs)]
            )
    return out


PEER_MODELS = {"treelstm": treelstm, "birnn": birnn}
