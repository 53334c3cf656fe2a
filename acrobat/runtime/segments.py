"""List reductions answered in batches: the runtime side of :mod:`acrobat.ir.list_ops`.

A fiber that reaches ``sum(xs)``, ``max(xs)``, ``argmax(scores)`` or ``attend(keys, values,
query)`` of a List yields ``(REDUCE, (kind, out, ids, ids2, query, signature))``
(:mod:`acrobat.codegen.records`) and waits, as a read does. Once every fiber waits, the
pending DFG runs; then :func:`answer` answers the pass's reductions with its reads. The
requests of one reduction and one signature (the element and result types) are ONE
segmented launch over every instance's list, whatever its length: the rows of all the
lists gathered into one matrix, padded into ``[lists, longest, width]`` (a padding row
that cannot win: zeros for a sum, ``-inf`` for a max, a weight of zero in a softmax) and
reduced along the list axis. Each result is stored as the value id ``out`` the host
program gave it, in the arena of its type, before its fiber resumes (an ``argmax``'s fiber
resumes with the index).

A launch here counts as one in ``RunStats.launches`` (its lists as ``nodes``, its time in
``kernel_ms``); it is not a node of the DFG, so the schedule views do not show it, and a
traced run shows it as a ``"list_reductions"`` host span. The padding costs ``lists x longest`` rows: the launch's work follows the
longest list of the pass, as a batched kernel's follows its largest instance.
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
    among them. ``stats``: the
    run's ``RunStats``; ``spans``: a traced run's host spans (each launch appends its
    ``("list_reductions", start, end)``), or None."""
    answers: list = [None] * len(ops)
    reads = [i for i, op in enumerate(ops) if op != REDUCE]
    groups: dict[tuple, list] = {}
    for i, op in enumerate(ops):
        if op == REDUCE:
            kind, out, a, b, q, sig = payloads[i]
            groups.setdefault((kind, sig), []).append((out, a, b, q, i))
    for (kind, sig), reqs in groups.items():
        start = time.perf_counter()
        if kind == ARGMAX:
            for (*_, i), index in zip(reqs, _argmax(ex, reqs)):
                answers[i] = index
        else:
            _launch(ex, kind, sig, reqs)
        ex.backend.synchronize()
        end = time.perf_counter()
        stats.kernel_ms += (end - start) * 1e3
        if spans is not None:
            spans.append(("list_reductions", start, end))
        stats.launches += 1
        stats.nodes += len(reqs)
    if reads:
        got = read_all([ops[i] for i in reads], [payloads[i] for i in reads])
        for i, g in zip(reads, got):
            answers[i] = g
    return answers


def _launch(ex, kind: int, sig: tuple, reqs: list) -> None:
    """One segmented launch: every request's reduction, each stored as its ``out``."""
    xp = ex.backend.xp
    shape, dtype = sig[0], sig[1]
    if kind == ATTEND:
        lens = [min(len(a), len(b)) for _, a, b, *_ in reqs]
        keys = _padded(ex, [a[:n] for (_, a, *_), n in zip(reqs, lens)], lens, 0.0)
        values = _padded(ex, [b[:n] for (_, _, b, *_), n in zip(reqs, lens)], lens, 0.0)
        query = _rows(ex, [q for _, _, _, q, _ in reqs])
        mask = xp.asarray(np.arange(max(lens))[None, :] < np.array(lens)[:, None])
        s = xp.einsum("sld,sd->sl", keys, query)
        s = xp.where(mask, s, -np.inf)
        w = xp.exp(s - s.max(axis=1, keepdims=True))
        result = xp.einsum("sl,slw->sw", w, values) / w.sum(axis=1, keepdims=True)
    else:
        lens = [len(a) for _, a, *_ in reqs]
        fill = 0.0 if kind == SUM else -np.inf
        x = _padded(ex, [a for _, a, *_ in reqs], lens, fill)
        width = int(np.prod(shape))
        if x.shape[1] == 0:  # every list empty (a sum): zeros
            result = xp.zeros((len(reqs), width), x.dtype)
        else:
            result = x.sum(axis=1) if kind == SUM else x.max(axis=1)
    arena = ex._arena(TensorType(tuple(shape), dtype))
    n = len(reqs)
    r0 = arena.alloc(n)
    arena.buf[r0 : r0 + n] = result.astype(arena.buf.dtype, copy=False)
    outs = np.array([out for out, *_ in reqs], np.int64)
    ex.reserve(int(outs.max()) + 1)
    ex.row_of[outs] = np.arange(r0, r0 + n)
    ex.arena_of[outs] = ex.arena_index[id(arena)]


def _argmax(ex, reqs: list) -> list[int]:
    """Each request's index of its largest score (one-element tensors; NaN the largest, the
    first of equal ones: ``argmax`` along the padded list axis, the padding ``-inf``)."""
    lens = [len(a) for _, a, *_ in reqs]
    x = _padded(ex, [a for _, a, *_ in reqs], lens, -np.inf)
    index = x.reshape(len(reqs), -1).argmax(axis=1)
    return ex.backend.to_host(index).tolist()


def _rows(ex, ids: list[int]):
    """The rows of values ``ids`` as one ``[len(ids), width]`` device matrix (the values
    may lie in several arenas: uploaded inputs and computed ones)."""
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


def _padded(ex, lists: list[list[int]], lens: list[int], fill: float):
    """``[len(lists), longest, width]``: each list's rows, padded with ``fill``."""
    xp = ex.backend.xp
    flat = [vid for lst in lists for vid in lst]
    longest = max(lens, default=0)
    if not flat:
        return xp.zeros((len(lists), longest, 0), np.float32)
    x = _rows(ex, flat)
    x = xp.concatenate([x, xp.full((1, x.shape[1]), fill, x.dtype)])  # the padding row
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    at = np.arange(longest)[None, :]
    idx = np.where(at < np.array(lens)[:, None], offsets[:, None] + at, len(flat))
    return x[xp.asarray(idx)]
