"""Berxit: a BERT-style encoder with early exit (Xin et al., EACL 2021; DeeBERT-style ramps).

Up to ``LAYERS = 6`` post-norm Transformer encoder layers, each with its OWN weights::

    q, k, v  = split(x W_qkv^T + b_qkv, 3)                  # [S, D] each
    q, k, v  -> [NH, S, HD]                                 # NH = D // HD heads of HD
    a        = softmax(q k^T / sqrt(HD))                    # [NH, S, S]
    y        = layer_norm(x + (a v -> [S, D]) W_o^T + b_o)
    x'       = layer_norm(y + gelu(y W_1^T + b_1) W_2^T + b_2)     # FFN D -> 4D -> D

After layers 1..5 an exit classifier on the first token decides whether to stop::

    confidence = max(softmax(x'[0] W_exit^T + b_exit))       # C = 2 classes
    stop if confidence > 0.8                                  # item(...) on the host

Then ``phase()`` and the final classifier ``logits = x'[0] W_cls^T + b_cls``. The program
returns ``(logits, number of layers used)``. The repetitive per-layer declarations and
calls are generated here with Python string templating; the SOURCE text users see is the
full program. The paper's artifact emulates the exit decision with a random draw: with
``decisions="random"`` the instance carries a host int exit layer drawn uniformly from
1..6 and the program exits after that layer.

The attention scale is written ``scores * HD**-0.5``: host arithmetic on sizes and literals
folds to a literal at parse time, and a literal may scale a tensor.

Initialisation (``init_params``): weight matrices N(0, 1 / fan_in), layer-norm gammas 1,
all biases and betas 0. With unit-variance tokens the exit logits have standard deviation
~1, and the 0.8 threshold stops about a third of the remaining instances at each exit.
Measured exit depths 1..6: 53/34/40/30/21/22 of 200 instances at tiny, 12/9/5/1/2/3 of 32
at small.
"""

import numpy as np

from acrobat.models import data

LAYERS = 6
THRESHOLD = 0.8

_HEADER = '''\
"""Berxit: BERT-style encoder layers with early exit (decisions: {mode})."""
D = Size("D", 768)
HD = Size("HD", 64)
S = Size("S", 128)
NH = D // HD
F = 4 * D
C = 2
'''

_LAYER_PARAMS = """\
W_qkv_{l}: Param[3 * D, D]
b_qkv_{l}: Param[3 * D]
W_o_{l}: Param[D, D]
b_o_{l}: Param[D]
g_att_{l}: Param[D]
be_att_{l}: Param[D]
W_1_{l}: Param[F, D]
b_1_{l}: Param[F]
W_2_{l}: Param[D, F]
b_2_{l}: Param[D]
g_ffn_{l}: Param[D]
be_ffn_{l}: Param[D]
"""

_EXIT_PARAMS = """\
W_exit_{l}: Param[C, D]
b_exit_{l}: Param[C]
"""

_FUNCTIONS = """\
W_cls: Param[C, D]
b_cls: Param[C]

def heads(x: Tensor[S, D]) -> Tensor[NH, S, HD]:
    return transpose(reshape(x, (S, NH, HD)), (1, 0, 2))

def attention(
    x: Tensor[S, D], W_qkv: Tensor[3 * D, D], b_qkv: Tensor[3 * D], W_o: Tensor[D, D],
    b_o: Tensor[D]
) -> Tensor[S, D]:
    q, k, v = split(dense(x, W_qkv, b_qkv), 3, 1)
    scores = batch_matmul(heads(q), heads(k), transpose_b=True) * HD**-0.5
    context = batch_matmul(softmax(scores, -1), heads(v))
    return dense(reshape(transpose(context, (1, 0, 2)), (S, D)), W_o, b_o)

def encoder_layer(
    x: Tensor[S, D], W_qkv: Tensor[3 * D, D], b_qkv: Tensor[3 * D], W_o: Tensor[D, D],
    b_o: Tensor[D], g_att: Tensor[D], be_att: Tensor[D], W_1: Tensor[F, D], b_1: Tensor[F],
    W_2: Tensor[D, F], b_2: Tensor[D], g_ffn: Tensor[D], be_ffn: Tensor[D]
) -> Tensor[S, D]:
    y = layer_norm(x + attention(x, W_qkv, b_qkv, W_o, b_o), g_att, be_att)
    return layer_norm(y + dense(gelu(dense(y, W_1, b_1)), W_2, b_2), g_ffn, be_ffn)
"""

_CONFIDENT = '''
def confident(h: Tensor[S, D], W_exit: Tensor[C, D], b_exit: Tensor[C]) -> bool:
    """The exit classifier on the first token is sure enough to stop here."""
    return item(max(softmax(dense(h[0:1], W_exit, b_exit), -1))) > {threshold}
'''

_LAYER_CALL = """\
    h = encoder_layer(
        {x}, W_qkv_{l}, b_qkv_{l}, W_o_{l}, b_o_{l}, g_att_{l}, be_att_{l},
        W_1_{l}, b_1_{l}, W_2_{l}, b_2_{l}, g_ffn_{l}, be_ffn_{l}
    )
"""

_EXIT = {
    "tensor": "    if confident(h, W_exit_{l}, b_exit_{l}):\n        return h, {l}\n",
    "random": "    if exit_layer == {l}:\n        return h, {l}\n",
}
_EXTRA_PARAM = {"tensor": "", "random": ", exit_layer: int"}
_EXTRA_ARG = {"tensor": "", "random": ", exit_layer"}

_MAIN = """
def main(x: Tensor[S, D]{param}) -> tuple[Tensor[C], int]:
    h, layers = encoder(x{arg})
    phase()
    return dense(reshape(h[0:1], (D,)), W_cls, b_cls), layers
"""


def _build(decisions: str) -> str:
    parts = [_HEADER.format(mode=decisions)]
    parts += [_LAYER_PARAMS.format(l=layer) for layer in range(1, LAYERS + 1)]
    parts += [_EXIT_PARAMS.format(l=layer) for layer in range(1, LAYERS)]
    parts.append(_FUNCTIONS)
    if decisions == "tensor":
        parts.append(_CONFIDENT.format(threshold=THRESHOLD))
    parts.append(
        f"\ndef encoder(x: Tensor[S, D]{_EXTRA_PARAM[decisions]}) -> tuple[Tensor[S, D], int]:\n"
        '    """Layers 1..6, leaving early when the exit decision says so."""\n'
    )
    for layer in range(1, LAYERS + 1):
        parts.append(_LAYER_CALL.format(x="x" if layer == 1 else "h", l=layer))
        if layer < LAYERS:
            parts.append(_EXIT[decisions].format(l=layer))
    parts.append(f"    return h, {LAYERS}\n")
    parts.append(_MAIN.format(param=_EXTRA_PARAM[decisions], arg=_EXTRA_ARG[decisions]))
    return "".join(parts)


SOURCE = _build("tensor")
SOURCE_RANDOM = _build("random")

SIZES = {
    "tiny": {"D": 16, "HD": 8, "S": 8},
    "small": {"D": 768, "HD": 64, "S": 128},
    "large": {"D": 1024, "HD": 64, "S": 128},
}
DESCRIPTION = "BERT-style encoder with a confidence-based early exit after each layer (Berxit)"
FEATURES = (
    "early exit (item on the exit classifier's confidence)",
    "separate weights per layer",
    "multi-head attention (batch_matmul)",
    "phase before the final classifier",
)
DEFAULT_DATA = "N(0, 1) sequences [S, D] of embedded tokens (+ an exit layer 1..6 in random mode)"
DECISIONS = ("tensor", "random")


def source(decisions: str = "tensor") -> str:
    """The program text for one decisions mode."""
    return SOURCE if decisions == "tensor" else SOURCE_RANDOM


def instances(n: int, seed: int, sizes: dict, decisions: str = "tensor") -> list:
    """``n`` N(0, 1) token sequences; in random mode each with an exit layer from 1..6."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = data.gaussian(rng, (sizes["S"], sizes["D"]))
        out.append(x if decisions == "tensor" else (x, int(rng.integers(1, LAYERS + 1))))
    return out


def validate(instance, sizes: dict, decisions: str = "tensor") -> str | None:
    """Tokens must be finite; a random-mode exit layer must lie in 1..6."""
    x = instance if decisions == "tensor" else instance[0]
    if not np.all(np.isfinite(x)):
        return "the token sequence has non-finite values"
    if decisions == "random" and not 1 <= instance[1] <= LAYERS:
        return f"exit layer {instance[1]} is outside 1..{LAYERS}"
    return None


def init_params(module, seed: int, sizes: dict) -> dict[str, np.ndarray]:
    """N(0, 1/fan_in) matrices, unit layer-norm gammas, zero biases and betas."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in module.params:
        shape = p.ty.shape
        if len(shape) == 2:
            out[p.name] = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
        elif p.name.startswith("g_"):
            out[p.name] = np.ones(shape, np.float32)
        else:
            out[p.name] = np.zeros(shape, np.float32)
    return out
