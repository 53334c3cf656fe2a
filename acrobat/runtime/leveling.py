"""Critical-path leveling: how the ``acrobat`` policy merges work across depths.

The host program gives every node a depth key (``phase * STRIDE + depth``) as it records
it, and the paper's schedule launches one batch per (key, kernel). Where instances reach
the same kind of work at different depths (child lists of different lengths, instances
that finish early, rounds of reads that end at different levels), equal work sits under
different keys and launches more than once.

Leveling schedules a pass's nodes again, phase by phase, with a list scheduler over the
pass's dependencies: among the kernels that have ready nodes, launch the one whose ready
nodes head the longest chain still to run in the phase (the critical path first), all of
its ready nodes at once. Work off the critical path waits, and joins the next launch of its
kernel instead of making its own. On the built-in models it never launches more than
DyNet's depth or agenda policies, and often much less (docs/paper.md §4). If it
ever came out with more batches than the key buckets, the key buckets are kept: leveling
never adds a launch.

Cost: one pass over the nodes and edges in compiled code. The native engine's is the C
core's ``list_schedule`` (``sched.c``: the same algorithm, reading the DFG's record arrays
where they lie and returning the batches, so a pass costs a few microseconds besides its
nodes; :func:`native_schedule` calls it); the reference engine's is :func:`_list_schedule`
compiled by numba (once, cached on disk), or run as Python without numba, correct but
slow. The three give the same schedule (tests/runtime/test_schedules.py). :func:`jit_ms`
is the time compiling or loading numba's took in this process (0 where the native one
runs).
"""

from __future__ import annotations

import time

import numpy as np

from acrobat.codegen.records import ARGS, KEY, OUT, STRIDE


def _list_schedule(flat, seg, table):
    """The schedule of one pass, in compiled code (see the module docstring).

    ``flat`` is every kernel's record rows one after the other (int64); ``seg[i] = (kernel,
    rows)`` per kernel with rows, in kernel order; ``table[k] = (row width, outputs, number
    of batched arguments, their columns...)`` per kernel id.

    Returns ``(local, meta)``: ``meta = [batches, leveled, bounds (batches + 1), kernels
    (batches), levels (batches)]``; batch ``b`` runs kernel ``kernels[b]`` on local rows
    ``local[bounds[b]:bounds[b + 1]]`` (ascending), formed at ``levels[b]``. ``leveled`` is 1
    for the list schedule (a batch's level is the smallest key among its nodes), 0 when the
    key buckets (one batch per distinct (key, kernel), keys ascending, then kernels) launch
    no more batches and are returned instead."""
    m = seg.shape[0]
    n_k = table.shape[0]
    n = 0
    for i in range(m):
        n += seg[i, 1]
    kg = np.empty(n, np.int64)  # kernel of each node (nodes in segment order)
    lg = np.empty(n, np.int64)  # local row
    base = np.empty(n, np.int64)  # where its row starts in flat
    key = np.empty(n, np.int64)
    out = np.empty(n, np.int64)
    phase = np.empty(n, np.int64)
    waiting = np.zeros(n, np.int64)
    height = np.empty(n, np.int64)
    nxt = np.empty(n, np.int64)
    local = np.empty(n, np.int64)
    cell = np.empty(n, np.int64)
    deg = np.zeros(n + 1, np.int64)
    head = np.full(n_k, -1, np.int64)  # per kernel: a linked list of its ready nodes
    cnt = np.zeros(n_k, np.int64)
    hmax = np.full(n_k, -1, np.int64)
    g = 0
    lo = np.int64(1) << 62
    hi = np.int64(-1)
    at = 0
    for i in range(m):
        k = seg[i, 0]
        w = table[k, 0]
        last = table[k, 1] - 1
        for r in range(seg[i, 1]):
            kg[g] = k
            lg[g] = r
            base[g] = at
            key[g] = flat[at + KEY]
            phase[g] = key[g] // STRIDE
            o = flat[at + OUT]
            out[g] = o
            if o < lo:
                lo = o
            if o + last > hi:
                hi = o + last
            at += w
            g += 1
    # the producer of every value this pass makes
    producer = np.full(hi - lo + 1, -1, np.int64)
    for g in range(n):
        for j in range(table[kg[g], 1]):
            producer[out[g] + j - lo] = g
    # edges producer -> consumer, as a CSR of consumers (one entry per argument use); the
    # producer of each use (-1: made before this pass) found once
    n_uses = 0
    for g in range(n):
        n_uses += table[kg[g], 2]
    use = np.empty(n_uses, np.int64)
    u = 0
    n_edges = 0
    for g in range(n):
        k = kg[g]
        for a in range(table[k, 2]):
            v = flat[base[g] + table[k, 3 + a]]
            p = -1
            if lo <= v <= hi:
                p = producer[v - lo]
                if p >= 0:
                    deg[p + 1] += 1
                    waiting[g] += 1
                    n_edges += 1
            use[u] = p
            u += 1
    for g in range(n):
        deg[g + 1] += deg[g]
    cons = np.empty(n_edges, np.int64)
    fill = deg[:n].copy()
    u = 0
    for g in range(n):
        for _ in range(table[kg[g], 2]):
            p = use[u]
            u += 1
            if p >= 0:
                cons[fill[p]] = g
                fill[p] += 1
    # heights: the longest chain of same-phase consumers below each node; value ids grow in
    # recording order, so walking the ids down visits consumers before their producers
    for v in range(hi, lo - 1, -1):
        g = producer[v - lo]
        if g < 0 or out[g] != v:
            continue
        best = 0
        for e in range(deg[g], deg[g + 1]):
            c = cons[e]
            if phase[c] == phase[g] and height[c] + 1 > best:
                best = height[c] + 1
        height[g] = best
    # the nodes phase by phase, each phase's in segment order (a counting sort: phases are
    # few and close together; a sort where they are not)
    pmin = phase.min()
    span = phase.max() - pmin + 1
    if span == 1:
        by_phase = np.arange(n)
    elif span <= 2 * n:
        start_of = np.zeros(span + 1, np.int64)
        for g in range(n):
            start_of[phase[g] - pmin + 1] += 1
        for p in range(span):
            start_of[p + 1] += start_of[p]
        by_phase = np.empty(n, np.int64)
        for g in range(n):
            by_phase[start_of[phase[g] - pmin]] = g
            start_of[phase[g] - pmin] += 1
    else:
        by_phase = np.argsort(phase, kind="mergesort")
    # list scheduling, phase by phase
    meta = np.empty(3 * n + 3, np.int64)
    bounds = meta[2 : n + 3]
    bkernel = meta[n + 3 : 2 * n + 3]
    blevel = meta[2 * n + 3 : 3 * n + 3]
    bounds[0] = 0
    nb = 0
    pos = 0
    s = 0
    while s < n:
        ph = phase[by_phase[s]]
        e_ = s
        while e_ < n and phase[by_phase[e_]] == ph:
            e_ += 1
        left = e_ - s
        for t in range(s, e_):
            g = by_phase[t]
            if waiting[g] == 0:
                k = kg[g]
                nxt[g] = head[k]
                head[k] = g
                cnt[k] += 1
                if height[g] > hmax[k]:
                    hmax[k] = height[g]
        while left > 0:
            pick = -1
            for k in range(n_k):
                if cnt[k] > 0 and (pick < 0 or hmax[k] > hmax[pick]):
                    pick = k
            # detach the kernel's ready list: what its nodes make ready (even of the same
            # kernel) goes on a new list, for a later launch
            g = head[pick]
            head[pick] = -1
            cnt[pick] = 0
            hmax[pick] = -1
            start = pos
            lev = key[g]
            while g >= 0:
                local[pos] = lg[g]
                pos += 1
                if key[g] < lev:
                    lev = key[g]
                nx = nxt[g]
                for e in range(deg[g], deg[g + 1]):
                    c = cons[e]
                    waiting[c] -= 1
                    if waiting[c] == 0 and phase[c] == ph:
                        kc = kg[c]
                        nxt[c] = head[kc]
                        head[kc] = c
                        cnt[kc] += 1
                        if height[c] > hmax[kc]:
                            hmax[kc] = height[c]
                g = nx
            left -= pos - start
            # ascending local rows: a ready list usually comes out in descending or
            # ascending order already (reversed, or kept); a sort only where it does not
            down = True
            up = True
            for t in range(start + 1, pos):
                if local[t] > local[t - 1]:
                    down = False
                else:
                    up = False
            if down:
                local[start:pos] = local[start:pos][::-1].copy()
            elif not up:
                local[start:pos].sort()
            bkernel[nb] = pick
            blevel[nb] = lev
            nb += 1
            bounds[nb] = pos
        s = e_
    # the key buckets, and how many there are: a counting sort by (key, kernel), stable (so
    # local rows stay ascending in each bucket). A node's cell is its phase's first cell, plus
    # the rank of its depth among the phase's depths times the kernels, plus its kernel:
    # cells ascend with (key, kernel).
    first = 0
    s = 0
    while s < n:
        ph = phase[by_phase[s]]
        e_ = s
        kmin = key[by_phase[s]]
        kmax = kmin
        while e_ < n and phase[by_phase[e_]] == ph:
            if key[by_phase[e_]] < kmin:
                kmin = key[by_phase[e_]]
            if key[by_phase[e_]] > kmax:
                kmax = key[by_phase[e_]]
            e_ += 1
        if kmax - kmin <= 4 * (e_ - s) + 64:  # depths close together: rank them by counting
            rank = np.zeros(kmax - kmin + 2, np.int64)
            for t in range(s, e_):
                rank[key[by_phase[t]] - kmin + 1] = 1
            for d in range(kmax - kmin + 1):
                rank[d + 1] += rank[d]
            for t in range(s, e_):
                g = by_phase[t]
                cell[g] = first + rank[key[g] - kmin] * n_k + kg[g]
            first += rank[kmax - kmin + 1] * n_k
        else:  # far apart: rank them by sorting
            uk = np.unique(key[by_phase[s:e_]])
            for t in range(s, e_):
                g = by_phase[t]
                cell[g] = first + np.searchsorted(uk, key[g]) * n_k + kg[g]
            first += uk.shape[0] * n_k
        s = e_
    count = np.zeros(first + 1, np.int64)
    for g in range(n):
        count[cell[g] + 1] += 1
    buckets = 0
    for c in range(1, first + 1):
        if count[c] > 0:
            buckets += 1
    leveled = nb < buckets
    if not leveled:
        nb = 0
        for c in range(first):
            if count[c + 1] > 0:
                bounds[nb] = count[c]
                bkernel[nb] = c % n_k
                nb += 1
            count[c + 1] += count[c]
        bounds[nb] = n
        for g in range(n):
            at = count[cell[g]]
            local[at] = lg[g]
            nxt[at] = g  # (free now) which node sits at `at`
            count[cell[g]] += 1
        for b in range(nb):
            blevel[b] = key[nxt[bounds[b]]]
    # pack: [nb, leveled, bounds, kernels, levels]
    meta[0] = nb
    meta[1] = 1 if leveled else 0
    packed = np.empty(3 * nb + 3, np.int64)
    packed[0] = nb
    packed[1] = meta[1]
    packed[2 : nb + 3] = bounds[: nb + 1]
    packed[nb + 3 : 2 * nb + 3] = bkernel[:nb]
    packed[2 * nb + 3 : 3 * nb + 3] = blevel[:nb]
    return local, packed


_COMPILED = None
_JIT_MS = 0.0


def _schedule_fn():
    """The compiled :func:`_list_schedule` (numba, cached on disk), made on first use; the
    Python function itself where numba is not installed."""
    global _COMPILED, _JIT_MS
    if _COMPILED is None:
        t = time.perf_counter()
        try:
            import numba
        except ImportError:  # correct without it, only slower
            _COMPILED = _list_schedule
        else:
            fn = numba.njit(cache=True, nogil=True)(_list_schedule)
            _warm(fn)  # compile now (or load the cache), not in the middle of a run
            _COMPILED = fn
        _JIT_MS += (time.perf_counter() - t) * 1e3
    return _COMPILED


def warm() -> None:
    """Make the Python scheduler ready now: compile (or load from the disk cache) numba's
    (a runtime whose engine schedules natively never calls it)."""
    _schedule_fn()


def jit_ms() -> float:
    """Milliseconds this process spent compiling (or loading from the disk cache) the
    leveling scheduler: paid once, by the first run that levels."""
    return _JIT_MS


def _warm(fn) -> None:
    row = np.zeros(ARGS, np.int64)
    fn(row, np.array([[0, 1]], np.int64), np.array([[ARGS, 1, 0]], np.int64))


class _Tables:
    """Per kernel list (a Runtime's ``KernelInfo`` list): the table the scheduler reads,
    ``(row width, outputs, batched arguments, their columns...)`` per kernel."""

    __slots__ = ("kernels", "table")

    def __init__(self, kernels):
        self.kernels = kernels
        cols = [[ARGS + a for a, b in enumerate(ki.arg_batched) if b] for ki in kernels]
        wide = max((len(c) for c in cols), default=0)
        self.table = np.zeros((len(kernels), 3 + wide), np.int64)
        for k, (ki, c) in enumerate(zip(kernels, cols)):
            self.table[k, :3] = (ARGS + len(ki.arg_batched) + ki.extra, ki.n_outputs, len(c))
            self.table[k, 3 : 3 + len(c)] = c


_TABLES: dict[int, _Tables] = {}


def _tables(kernels) -> _Tables:
    t = _TABLES.get(id(kernels))
    if t is None or t.kernels is not kernels:
        if len(_TABLES) > 64:
            _TABLES.clear()
        t = _TABLES[id(kernels)] = _Tables(kernels)
    return t


def kernel_table(kernels) -> np.ndarray:
    """The table the native scheduler reads for the kernel list ``kernels`` (a DFG's
    ``kernels``): per kernel, (row width, outputs, batched arguments, their columns...)."""
    return _tables(kernels).table


def inputs(dfg):
    """The arguments of :func:`_list_schedule` for ``dfg`` (None when it has no nodes)."""
    records = dfg.records
    present = [k for k, r in enumerate(records) if len(r)]
    if not present:
        return None
    seg = np.array([(k, len(records[k])) for k in present], np.int64)
    if len(present) == 1:
        flat = records[present[0]].ravel()
    else:
        flat = np.concatenate([records[k].ravel() for k in present])
    return flat, seg, _tables(dfg.kernels).table


def native_schedule(dfg, batch, native):
    """The schedule of ``dfg`` by a native scheduler (``native``: an engine's flush, whose
    ``list_schedule`` it calls with the engine's ``new_int64s``), as ``batch(kernel, local
    rows, level)`` tuples in launch order (the schedule :func:`level_schedule` gives);
    None where the scheduler declines the DFG (records that are not int64 C-contiguous
    rows of their kernel's width)."""
    fn, alloc = native
    return fn(dfg.records, _tables(dfg.kernels).table, KEY, OUT, STRIDE, batch, alloc)


def level_schedule(dfg):
    """The schedule of ``dfg`` as ``[(kernel, local rows, level)]`` in launch order: the
    leveled one, or the key buckets where those launch no more batches (see
    :func:`_list_schedule`); ``[]`` for an empty DFG."""
    args = inputs(dfg)
    if args is None:
        return []
    local, packed = _schedule_fn()(*args)
    meta = packed.tolist()
    nb = meta[0]
    b = meta[2 : nb + 3]
    return [
        (k, local[b[i] : b[i + 1]], lv)
        for i, (k, lv) in enumerate(zip(meta[nb + 3 : 2 * nb + 3], meta[2 * nb + 3 :]))
    ]
