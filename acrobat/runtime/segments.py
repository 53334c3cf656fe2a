"""List reductions answered in batches: the runtime side of :mod:`acrobat.ir.list_ops`.

A fiber that reaches ``sum(xs)``, ``max(xs)``, ``argmax(scores)`` or ``attend(keys, values,
query)`` of a List yields ``(REDUCE, (kind, out, ids, ids2, query, signature))``
(:mod:`acrobat.codegen.records`) and waits, as a read does. Once every fiber waits, the
pending DFG runs; then :func:`answer` answers the pass's reductions with its reads. The
requests of one reduction and one signature (the element and result types) are ONE
segmented launch over every instance's list, whatever its length: the rows of all the
lists gathered into one matrix and reduced segment by segment. Each result is stored as
the value id ``out`` the host program gave it, in the arena of its type, before its fiber
resumes (an ``argmax``'s fiber resumes with the index).

On host arrays (NumPy) the segments are reduced in place with ``ufunc.reduceat``: the work
and memory follow the lists' total length. Other backends pad the lists into ``[lists,
longest, width]`` (a padding row that cannot win: zeros for a sum, ``-inf`` for a max and
a score, a weight of zero in a softmax) and reduce along the list axis; where padding to the
longest list would take more than :data:`PAD_BUDGET` elements and more than twice the lists'
rows, the lists are padded in groups of similar length (one launch each), so one long list
among short ones costs its own rows, not theirs times its length.

A launch counts in ``RunStats.launches`` (its lists as ``nodes``, its time in
``kernel_ms``); it is not a node of the DFG, so the schedule views do not show it, and a
traced run shows it as a ``"list_reductions"`` host span.
"""

from __future__ import annotations

import time

import numpy as np

from acrobat.codegen.records import REDUCE
from acrobat.ir.list_ops import LIST_REDUCTIONS
from acrobat.ir.types import TensorType

SUM, MAX, ATTEND, ARGMAX = (
    LIST_REDUCTIONS.index(k) for k in ("list_sum", "list_max", "list_attend", "list_argmax")
)


def answer(ex, stats, spans, ops: list[int], payloads: list, read_all) -> list:
    """Every answer of a pass's requests, in order: ``None`` for a list reduction (its
    value is stored), an ``argmax``'s index, ``read_all(ops, value ids)`` for the reads
    among them. ``stats``: the run's ``RunStats``; ``spans``: a traced run's host spans
    (each launch appends its ``("list_reductions", start, end)``), or None."""
    answers: list = [None] * len(ops)
    reads = [i for i, op in enumerate(ops) if op != REDUCE]
    groups: dict[tuple, list] = {}
    for i, op in enumerate(ops):
        if op == REDUCE:
            kind, out, a, b, q, sig = payloads[i]
            if kind == ATTEND:  # zipped: the shorter list decides
                n = min(len(a), len(b))
                a, b = a[:n], b[:n]
            groups.setdefault((kind, sig), []).append((out, a, b, q, i))
    for (kind, sig), reqs in groups.items():
        start = time.perf_counter()
        launches, result = _reduce(ex, kind, reqs, int(np.prod(sig[0])))
        if kind == ARGMAX:
            for (*_, i), index in zip(reqs, ex.backend.to_host(result).tolist()):
                answers[i] = int(index)
        else:
            _store(ex, sig, [out for out, *_ in reqs], result)
        ex.backend.synchronize()
        end = time.perf_counter()
        stats.kernel_ms += (end - start) * 1e3
        if spans is not None:
            spans.append(("list_reductions", start, end))
        stats.launches += launches
        stats.nodes += len(reqs)
    if reads:
        got = read_all([ops[i] for i in reads], [payloads[i] for i in reads])
        for i, g in zip(reads, got):
            answers[i] = g
    return answers


def _reduce(ex, kind: int, reqs: list, width: int):
    """``(launches, result)``: every request's reduction, ``[lists, width]`` (an argmax's:
    ``[lists]`` indices), on the backend's arrays."""
    xp = ex.backend.xp
    lens = np.array([len(a) for _, a, *_ in reqs], np.int64)
    if xp is np:
        return 1, _flat(ex, kind, reqs, lens, width)
    groups = _groups(lens, width)
    if len(groups) == 1:
        return 1, _padded(ex, kind, reqs, lens, width)
    parts = [_padded(ex, kind, [reqs[i] for i in g], lens[g], width) for g in groups]
    result = xp.empty((len(reqs), *parts[0].shape[1:]), parts[0].dtype)
    for g, part in zip(groups, parts):
        result[xp.asarray(g)] = part
    return len(groups), result


PAD_BUDGET = 1 << 22
"""Padded elements (16 MiB of float32) a launch may always take: past it, and past twice
the lists' own, the lists are padded in groups of similar length."""


def _groups(lens: np.ndarray, width: int) -> list[np.ndarray]:
    """The lists in one group when padding them to the longest stays within
    :data:`PAD_BUDGET` or twice their own rows, else in groups of lengths within a factor
    of two (each padded to its own longest)."""
    padded = len(lens) * int(lens.max(initial=0))
    if padded * max(width, 1) <= PAD_BUDGET or padded <= 2 * (int(lens.sum()) + len(lens)):
        return [np.arange(len(lens))]
    key = np.ceil(np.log2(np.maximum(lens, 1))).astype(np.int64)
    return [np.flatnonzero(key == k) for k in np.unique(key)]


def _flat(ex, kind: int, reqs: list, lens: np.ndarray, width: int):
    """The reductions on host arrays, segment by segment in place (``ufunc.reduceat``)."""
    n_lists = len(reqs)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.intp)
    full = lens > 0
    x = _rows(ex, [vid for _, a, *_ in reqs for vid in a])
    if kind == SUM:
        out = np.zeros((n_lists, width), np.float32)
        if x is not None:
            out[full] = np.add.reduceat(x, starts[full], axis=0)
        return out
    if kind == MAX:  # (no list is empty: the host program raised)
        return np.maximum.reduceat(x, starts, axis=0)
    seg = np.repeat(np.arange(n_lists), lens)
    if kind == ARGMAX:  # the first index holding the max (a NaN: the first NaN)
        s = x[:, 0]
        top = np.maximum.reduceat(s, starts)[seg]
        hit = (s == top) | (np.isnan(s) & np.isnan(top))
        at = np.arange(len(s)) - starts[seg]
        return np.minimum.reduceat(np.where(hit, at, len(s)), starts)
    values = _rows(ex, [vid for _, _, b, *_ in reqs for vid in b])
    query = _rows(ex, [q for _, _, _, q, _ in reqs])
    s = np.einsum("nd,nd->n", x, query[seg])
    w = np.exp(s - np.maximum.reduceat(s, starts)[seg])
    total = np.add.reduceat(w, starts)
    return np.add.reduceat(w[:, None] * values, starts, axis=0) / total[:, None]


def _padded(ex, kind: int, reqs: list, lens: np.ndarray, width: int):
    """The reductions with the lists padded to the longest (any backend)."""
    xp = ex.backend.xp
    fill = 0.0 if kind in (SUM, ATTEND) else -np.inf
    x = _padded_rows(ex, [a for _, a, *_ in reqs], lens, fill)
    if kind == SUM:
        if x is None:  # every list empty: zeros
            return xp.zeros((len(reqs), width), np.float32)
        return x.sum(axis=1)
    if kind == MAX:
        return x.max(axis=1)
    if kind == ARGMAX:
        return x.reshape(len(reqs), -1).argmax(axis=1)
    values = _padded_rows(ex, [b for _, _, b, *_ in reqs], lens, 0.0)
    query = _rows(ex, [q for _, _, _, q, _ in reqs])
    mask = xp.asarray(np.arange(x.shape[1])[None, :] < lens[:, None])
    s = xp.where(mask, xp.einsum("sld,sd->sl", x, query), -np.inf)
    w = xp.exp(s - s.max(axis=1, keepdims=True))
    return xp.einsum("sl,slw->sw", w, values) / w.sum(axis=1, keepdims=True)


def _store(ex, sig: tuple, outs: list[int], result) -> None:
    """Each result row as the value id in ``outs``, in the arena of the signature's type."""
    arena = ex._arena(TensorType(tuple(sig[0]), sig[1]))
    n = len(outs)
    r0 = arena.alloc(n)
    arena.buf[r0 : r0 + n] = result.astype(arena.buf.dtype, copy=False)
    ids = np.array(outs, np.int64)
    ex.reserve(int(ids.max()) + 1)
    ex.row_of[ids] = np.arange(r0, r0 + n)
    ex.arena_of[ids] = ex.arena_index[id(arena)]


def _rows(ex, ids: list[int]):
    """The rows of values ``ids`` as one ``[len(ids), width]`` array on the backend (the
    values may lie in several arenas: uploaded inputs and computed ones); None for none."""
    if not ids:
        return None
    xp = ex.backend.xp
    ids = np.asarray(ids, np.int64)
    which, rows = ex.arena_of[ids], ex.row_of[ids]
    first = int(which[0])
    if (which == first).all():
        return ex.arena_list[first].buf[xp.asarray(rows)]
    out = None
    for a in np.unique(which).tolist():
        sel = np.flatnonzero(which == a)
        part = ex.arena_list[a].buf[xp.asarray(rows[sel])]
        if out is None:
            out = xp.empty((len(ids), part.shape[1]), part.dtype)
        out[xp.asarray(sel)] = part
    return out


def _padded_rows(ex, lists: list[list[int]], lens: np.ndarray, fill: float):
    """``[len(lists), longest, width]``: each list's rows, padded with ``fill``; None when
    every list is empty."""
    xp = ex.backend.xp
    x = _rows(ex, [vid for lst in lists for vid in lst])
    if x is None:
        return None
    x = xp.concatenate([x, xp.full((1, x.shape[1]), fill, x.dtype)])  # the padding row
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    at = np.arange(int(lens.max()))[None, :]
    idx = np.where(at < lens[:, None], offsets[:, None] + at, len(x) - 1)
    return x[xp.asarray(idx)]
