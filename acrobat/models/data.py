"""Seeded input generators for the model zoo. Nothing is downloaded at run time.

SST-like sentence lengths
    The Stanford Sentiment Treebank's sentences average about 19 tokens and run from 1 to
    about 55. We draw ``round(lognormal(log 17, 0.5))`` clipped to [1, 55]: mean ≈ 19.3,
    median 17, 5th/95th percentiles ≈ 8 / 39. Parse-tree shapes are random binary
    bracketings: a span splits at a uniformly random point, recursively (done with an
    explicit stack, so any size works).

Every generator takes a ``numpy.random.Generator`` so a seed fixes the whole batch.
"""

from __future__ import annotations

import numpy as np

from acrobat.ir.values import AdtValue, from_list

SST_MEAN_LOG, SST_SIGMA, SST_MAX = float(np.log(17.0)), 0.5, 55


def sst_length(rng: np.random.Generator) -> int:
    """One sentence length drawn to match SST (see the module docstring)."""
    return int(np.clip(round(rng.lognormal(SST_MEAN_LOG, SST_SIGMA)), 1, SST_MAX))


def binary_tree(leaves: list, rng: np.random.Generator, leaf="Leaf", node="Node") -> AdtValue:
    """A random binary bracketing of ``leaves`` (each a field value of a leaf)."""
    if not leaves:
        raise ValueError("a tree needs at least one leaf")
    # post-order construction with an explicit stack of spans
    stack: list[tuple[int, int, bool]] = [(0, len(leaves), False)]
    built: list[AdtValue] = []
    splits: dict[tuple[int, int], int] = {}
    while stack:
        lo, hi, done = stack.pop()
        if hi - lo == 1:
            built.append(AdtValue(leaf, (leaves[lo],)))
        elif done:
            right, left = built.pop(), built.pop()
            built.append(AdtValue(node, (left, right)))
        else:
            mid = int(rng.integers(lo + 1, hi))
            splits[(lo, hi)] = mid
            stack += [(lo, hi, True), (mid, hi, False), (lo, mid, False)]
    return built[0]


def complete_tree(height: int, leaf_value, leaf="Leaf", node="Node") -> AdtValue:
    """A complete binary tree with ``2**height`` leaves, each holding ``leaf_value(i)``."""
    level = [AdtValue(leaf, (leaf_value(i),)) for i in range(2**height)]
    while len(level) > 1:
        level = [AdtValue(node, (level[i], level[i + 1])) for i in range(0, len(level), 2)]
    return level[0]


def degenerate_tree(depth: int, leaf_value, leaf="Leaf", node="Node") -> AdtValue:
    """A left-leaning chain ``depth`` nodes deep (the worst case for recursion)."""
    t = AdtValue(leaf, (leaf_value(0),))
    for i in range(depth):
        t = AdtValue(node, (t, AdtValue(leaf, (leaf_value(i + 1),))))
    return t


def sst_tree(rng: np.random.Generator, vocab: int) -> AdtValue:
    """An SST-like parse tree of word ids."""
    n = sst_length(rng)
    return binary_tree([int(w) for w in rng.integers(0, vocab, n)], rng)


def random_tree(rng: np.random.Generator, vocab: int, lo: int = 10, hi: int = 60) -> AdtValue:
    """A random binary tree with ``lo..hi`` leaves (the shape of our DyNet comparison)."""
    n = int(rng.integers(lo, hi + 1))
    return binary_tree([int(w) for w in rng.integers(0, vocab, n)], rng)


def token_sequence(rng: np.random.Generator, vocab: int, lo: int = 1, hi: int | None = None):
    """A ``List[int]`` of token ids; SST-like length unless ``hi`` is given."""
    n = sst_length(rng) if hi is None else int(rng.integers(lo, hi + 1))
    return from_list([int(w) for w in rng.integers(0, vocab, n)])


def shift_reduce(rng: np.random.Generator, n_tokens: int) -> list[int]:
    """A uniformly random VALID transition sequence: 0 = SHIFT, 1 = REDUCE.

    Valid means: SHIFT only while tokens remain, REDUCE only with two or more states on
    the stack, and it ends with one state (``2 * n - 1`` transitions).
    """
    out, stack, left = [], 0, n_tokens
    while left or stack > 1:
        can_shift, can_reduce = left > 0, stack > 1
        if can_shift and (not can_reduce or rng.random() < 0.5):
            out.append(0)
            stack, left = stack + 1, left - 1
        else:
            out.append(1)
            stack -= 1
    return out


def valid_transitions(ts: list[int], n_tokens: int) -> str | None:
    """Why ``ts`` is not a valid shift-reduce sequence for ``n_tokens`` tokens, or None."""
    stack, left = 0, n_tokens
    for k, t in enumerate(ts):
        if t == 0:
            if not left:
                return f"transition {k}: SHIFT with no tokens left"
            stack, left = stack + 1, left - 1
        elif t == 1:
            if stack < 2:
                return f"transition {k}: REDUCE needs two states on the stack, has {stack}"
            stack -= 1
        else:
            return f"transition {k}: {t!r} is neither 0 (SHIFT) nor 1 (REDUCE)"
    if left or stack != 1:
        return f"ends with {left} token(s) unread and {stack} state(s) on the stack"
    return None


def gaussian(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    """A float32 tensor of N(0, scale^2) draws."""
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def check_tree_words(tree: AdtValue, vocab: int, leaf: str = "Leaf") -> str | None:
    """Why a tree of word ids does not fit a vocabulary of ``vocab`` words, or None."""
    stack = [tree]
    while stack:
        t = stack.pop()
        if t.ctor == leaf:
            w = t.fields[0]
            if not 0 <= w < vocab:
                return f"word id {w} is outside the vocabulary [0, {vocab})"
        else:
            stack.extend(f for f in t.fields if isinstance(f, AdtValue))
    return None


# ----------------------------------------------------------------------------- n-ary trees and
# nested lists (child-sum TreeLSTM, NestedRNN) and id checks for any ADT value


def nary_tree(rng: np.random.Generator, vocab: int, max_children: int = 4) -> AdtValue:
    """An ``NTree`` of SST-like size: ``NNode(word, List[NTree])``, 1..``max_children`` kids.

    Words arrive in order; each after the first hangs under a uniformly random earlier word
    that has fewer than ``max_children`` children (a random recursive tree, like a
    dependency parse). Built bottom-up without recursion, so any size works.
    """
    n = sst_length(rng)
    words = [int(w) for w in rng.integers(0, vocab, n)]
    kids: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        open_ = [j for j in range(i) if len(kids[j]) < max_children]
        kids[open_[int(rng.integers(len(open_)))]].append(i)
    built: list[AdtValue | None] = [None] * n
    for i in reversed(range(n)):  # children always come after their parent
        built[i] = AdtValue("NNode", (words[i], from_list([built[j] for j in kids[i]])))
    return built[0]


def nested_tokens(
    rng: np.random.Generator, vocab: int, nodes: tuple[int, int], edges: tuple[int, int]
) -> AdtValue:
    """A ``List[List[int]]``: ``nodes`` (lo, hi) outer entries of ``edges`` (lo, hi) ids each."""
    outer = int(rng.integers(nodes[0], nodes[1] + 1))
    inner = [int(k) for k in rng.integers(edges[0], edges[1] + 1, outer)]
    return from_list([from_list([int(w) for w in rng.integers(0, vocab, k)]) for k in inner])


def check_token_ids(value: AdtValue, vocab: int, what: str = "token id") -> str | None:
    """Why an int inside ``value`` (a list, nested lists, a tree) is not in ``[0, vocab)``."""
    stack = [value]
    while stack:
        v = stack.pop()
        for f in v.fields:
            if isinstance(f, AdtValue):
                stack.append(f)
            elif (
                isinstance(f, (int, np.integer)) and not isinstance(f, bool) and not 0 <= f < vocab
            ):
                return f"{what} {f} is outside the vocabulary [0, {vocab})"
    return None
