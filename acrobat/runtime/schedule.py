"""Scheduling policies: pure functions from a DFG to an ordered list of batches.

* ``acrobat`` — buckets by (phase, inline depth, kernel), in that order: the host program
  already computed every node's depth (docs/paper.md §4); with ``CompileOptions.leveling``
  (the default) each pass is list-scheduled again, critical path first, where that
  launches fewer batches (:mod:`acrobat.runtime.leveling`).
* ``dynet-depth`` — DyNet's depth-based batching: a traversal computes each node's depth
  (1 + the deepest producer), then nodes of equal depth and kernel form a batch.
* ``dynet-agenda`` — DyNet's agenda heuristic: keep the ready nodes grouped by kernel and
  repeatedly run the group with the lowest average depth.
* ``eager`` — one launch per node, in recording order (no batching).

Policies live in a registry: :func:`register_policy` adds one (a function from a DFG to
its batches), :func:`policies` lists them in registration order (the order above), and
:func:`schedule` looks the name up. ``acrobat.policies()`` is the public view of it.

A valid schedule runs each node exactly once, after all of its producers, and each
batch holds nodes of one kernel. :func:`lower_bound` gives a number of batches no valid
schedule can beat: for each kernel, the most nodes of that kernel on one dependency path
(they need distinct batches), summed over kernels (a batch holds one kernel). It is at
least the longest path and the number of kernels, the bounds one might try first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from acrobat.codegen.records import KEY, STRIDE
from acrobat.registry import Registry
from acrobat.runtime.dfg import DFG
from acrobat.runtime.leveling import level_schedule, native_schedule


class Batch(NamedTuple):
    """Nodes (local indices into ``dfg.records[kernel]``) run as one launch (a named tuple:
    a run makes one per launch, and a frozen dataclass costs several times more to make)."""

    kernel: int
    nodes: np.ndarray
    level: int  # the depth key (acrobat) or computed depth the batch was formed at


@dataclass(frozen=True, slots=True)
class Schedule:
    """A policy's batches, in launch order (the bound is :func:`lower_bound`)."""

    policy: str
    batches: list[Batch]


PolicyFn = Callable[[DFG, bool], list[Batch]]


@dataclass(frozen=True)
class PolicyInfo:
    """A registered scheduling policy: its name, what it does (first docstring line), and
    whether its batches' ``level`` is the record key ``phase * STRIDE + depth`` (then the
    trace marks each phase boundary between batches)."""

    name: str
    doc: str
    keyed_levels: bool = False


@dataclass(frozen=True)
class _Policy:
    info: PolicyInfo
    fn: PolicyFn


_POLICIES: Registry[_Policy] = Registry("policy")


def register_policy(
    name: str, *, doc: str | None = None, keyed_levels: bool = False
) -> Callable[[PolicyFn], PolicyFn]:
    """Decorator: register ``fn(dfg, inline_depth) -> list[Batch]`` as policy ``name``.

    ``inline_depth`` is ``CompileOptions.inline_depth`` (a policy may ignore it); ``doc``
    defaults to the first line of the function's docstring; ``keyed_levels``: the batches'
    ``level`` is the record key ``phase * STRIDE + depth`` (see :class:`PolicyInfo`). The
    batches must form a valid schedule (each node once, after its producers; one kernel per
    batch)."""

    def add(fn: PolicyFn) -> PolicyFn:
        text = doc if doc is not None else (fn.__doc__ or "").strip().split("\n")[0]
        _POLICIES.add(name, _Policy(PolicyInfo(name, text, keyed_levels), fn))
        return fn

    return add


def unregister_policy(name: str) -> None:
    """Remove policy ``name`` (raises :class:`AcrobatNameError` if it is not registered)."""
    _POLICIES.remove(name)


def policies() -> tuple[PolicyInfo, ...]:
    """Every registered policy, in registration order (the built-ins first)."""
    return tuple(p.info for p in _POLICIES.values())


def policy_names() -> tuple[str, ...]:
    """The names of :func:`policies`, in the same order."""
    return _POLICIES.names()


def get_policy(name: str) -> PolicyFn:
    """The function of policy ``name``; an unknown name is an :class:`AcrobatNameError`
    that lists the registered policies."""
    return _POLICIES.lookup(name).fn


def policy_info(name: str) -> PolicyInfo:
    """What :func:`policies` says about policy ``name`` (unknown: :class:`AcrobatNameError`)."""
    return _POLICIES.lookup(name).info


def _groups(kernel: np.ndarray, local: np.ndarray, level: np.ndarray) -> list[Batch]:
    """Batches of equal (level, kernel), ordered by level then kernel."""
    n = len(kernel)
    if n == 0:
        return []
    order = np.lexsort((local, kernel, level))
    k, loc, lv = kernel[order], local[order], level[order]
    cuts = (np.flatnonzero((k[1:] != k[:-1]) | (lv[1:] != lv[:-1])) + 1).tolist()
    starts = [0, *cuts]
    ends = [*cuts, n]
    ks, lvs = k[starts].tolist(), lv[starts].tolist()
    return [Batch(kk, loc[s:e], v) for kk, v, s, e in zip(ks, lvs, starts, ends)]


def _buckets(keys: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(key, indices)`` per distinct key, keys ascending, indices ascending."""
    n = len(keys)
    if n <= 64:  # small: Python beats NumPy's per-call overhead
        lst = keys.tolist()
        first = lst[0]
        if lst.count(first) == n:
            return [(first, np.arange(n))]
        where: dict[int, list[int]] = {}
        for i, v in enumerate(lst):
            where.setdefault(v, []).append(i)
        return [(v, np.array(where[v], np.intp)) for v in sorted(where)]
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    cuts = (np.flatnonzero(sk[1:] != sk[:-1]) + 1).tolist()
    starts = [0, *cuts]
    return [(v, order[a:b]) for v, a, b in zip(sk[starts].tolist(), starts, [*cuts, n])]


def acrobat_schedule(dfg: DFG, level: bool = True, native=None) -> list[Batch]:
    """Buckets by inline depth key (phase-major), kernel by kernel; with ``level``, the
    pass is list-scheduled critical path first within each phase where that launches fewer
    batches (:mod:`acrobat.runtime.leveling`; ``native``: an engine's native scheduler,
    ``(list_schedule, new_int64s)``, else the Python one)."""
    if level:
        batches = native_schedule(dfg, Batch, native) if native is not None else None
        if batches is not None:
            return batches
        one = _one_key_each(dfg.records)
        if one is None:
            return list(map(Batch._make, level_schedule(dfg)))
        # every kernel's nodes share one key: one batch per kernel already, which no
        # schedule beats (the case of many small passes, e.g. between a fiber's reads)
        return [Batch(k, np.arange(len(dfg.records[k])), key) for key, k in sorted(one)]
    groups = []
    for k, r in enumerate(dfg.records):
        if len(r):
            groups.extend((key, k, nodes) for key, nodes in _buckets(r[:, KEY]))
    groups.sort(key=lambda g: (g[0], g[1]))
    return [Batch(k, nodes, key) for key, k, nodes in groups]


def _one_key_each(records) -> list[tuple[int, int]] | None:
    """``[(key, kernel)]`` when every kernel's records share one depth key, else None
    (as soon as one kernel's do not: its first and last rows usually tell)."""
    one = []
    for k, r in enumerate(records):
        if len(r):
            first = int(r[0, KEY])
            if r[-1, KEY] != first:
                return None
            if len(r) > 2:
                keys = r[:, KEY].tolist()
                if keys.count(first) != len(keys):
                    return None
            one.append((first, k))
    return one


def _predecessors(n: int, src: np.ndarray, dst: np.ndarray):
    """CSR of producers per node: ``src[order][bounds[i]:bounds[i + 1]]`` feed node ``i``."""
    order = np.argsort(dst, kind="stable")
    return src[order].tolist(), np.searchsorted(dst[order], np.arange(n + 1)).tolist()


def traversal_depths(dfg: DFG):
    """DyNet's depth: 1 + the max depth of a node's producers.

    One pass in recording order (producers are always recorded first), over a CSR of
    producers: linear in the edges."""
    k, loc, key, src, dst = dfg.edges()
    n = len(k)
    preds, bounds = _predecessors(n, src, dst)
    depth = [0] * n
    for i in range(n):
        a, b = bounds[i], bounds[i + 1]
        if a < b:
            depth[i] = 1 + max([depth[j] for j in preds[a:b]])
    return k, loc, key, src, dst, np.asarray(depth, np.int64)


def dynet_depth_schedule(dfg: DFG) -> list[Batch]:
    k, loc, *_, depth = traversal_depths(dfg)
    return _groups(k, loc, depth)


def runtime_depth_schedule(dfg: DFG) -> list[Batch]:
    """ACRoBat with inline depth off: depths by traversal, phases still honoured."""
    k, loc, key, *_, depth = traversal_depths(dfg)
    return _groups(k, loc, (key // STRIDE) * STRIDE + depth)


def dynet_agenda_schedule(dfg: DFG) -> list[Batch]:
    """Ready nodes grouped by kernel; run the group with the lowest mean depth first."""
    k, loc, _, src, dst, depth = traversal_depths(dfg)
    n = len(k)
    pairs = np.unique(np.stack([src, dst]), axis=1) if len(src) else np.zeros((2, 0), np.int64)
    waiting = np.bincount(pairs[1], minlength=n)
    order = np.argsort(pairs[0], kind="stable")
    cons_src, cons_dst = pairs[0][order], pairs[1][order]
    bounds = np.searchsorted(cons_src, np.arange(n + 1))
    ready: dict[int, list[int]] = {}
    for pos in np.flatnonzero(waiting == 0).tolist():
        ready.setdefault(int(k[pos]), []).append(pos)
    batches = []
    while ready:
        kk = min(ready, key=lambda g: (float(depth[ready[g]].mean()), g))
        group = ready.pop(kk)
        batches.append(Batch(kk, loc[group], int(depth[group].mean())))
        for pos in group:
            for c in cons_dst[bounds[pos] : bounds[pos + 1]].tolist():
                waiting[c] -= 1
                if waiting[c] == 0:
                    ready.setdefault(int(k[c]), []).append(c)
    return batches


def eager_schedule(dfg: DFG) -> list[Batch]:
    k, loc, _, key = dfg.all_nodes()
    return [Batch(int(a), np.array([b]), int(c)) for a, b, c in zip(k, loc, key)]


def kernel_chains(dfg: DFG) -> np.ndarray:
    """For every kernel, the most nodes of that kernel on any one dependency path.

    Level by level (levels from :func:`traversal_depths`): every producer of a node is on
    a lower level, so one vectorized update per level settles the level."""
    k, _, _, src, dst, depth = traversal_depths(dfg)
    n, nk = len(k), len(dfg.records)
    if n == 0:
        return np.zeros(nk, np.int64)
    own = np.zeros((n, nk), np.int64)
    own[np.arange(n), k] = 1
    chain = own.copy()
    if len(src):
        order = np.argsort(depth[dst], kind="stable")
        s, d = src[order], dst[order]
        cuts = np.flatnonzero(np.diff(depth[d])) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(d)]))):
            np.maximum.at(chain, d[lo:hi], chain[s[lo:hi]] + own[d[lo:hi]])
    return chain.max(axis=0)


def lower_bound(dfg: DFG) -> int:
    """Batches any valid schedule needs: the sum over kernels of the most nodes of that
    kernel on one dependency path (two such nodes can never share a batch, and a batch
    holds one kernel). It is at least the longest path and the number of kernels."""
    if dfg.num_nodes == 0:
        return 0
    return int(kernel_chains(dfg).sum())


# The built-in policies, in their canonical order (the order ``policies()`` lists them).


@register_policy("acrobat", keyed_levels=True)
def _acrobat(dfg: DFG, inline_depth: bool, leveling: bool = True, native=None) -> list[Batch]:
    """Buckets by (phase, inline depth, kernel): no traversal, the host computed the depths."""
    if inline_depth:
        return acrobat_schedule(dfg, leveling, native)
    return runtime_depth_schedule(dfg)


@register_policy("dynet-depth")
def _dynet_depth(dfg: DFG, inline_depth: bool) -> list[Batch]:
    """DyNet's depth-based batching: equal traversal depth and kernel form a batch."""
    return dynet_depth_schedule(dfg)


@register_policy("dynet-agenda")
def _dynet_agenda(dfg: DFG, inline_depth: bool) -> list[Batch]:
    """DyNet's agenda: run the ready kernel group with the lowest mean depth first."""
    return dynet_agenda_schedule(dfg)


@register_policy("eager")
def _eager(dfg: DFG, inline_depth: bool) -> list[Batch]:
    """One launch per node, in recording order (no batching)."""
    return eager_schedule(dfg)


builtin_acrobat = _acrobat
"""The built-in ``acrobat`` policy's function: a runtime that finds it registered under that
name may run its leveled schedule natively (``Executor.run_leveled``), batch for batch."""


def schedule(
    dfg: DFG, policy: str, inline_depth: bool = True, leveling: bool = True, native=None
) -> Schedule:
    """Run the registered policy ``policy`` on ``dfg``: its batches in launch order.

    ``leveling`` is ``CompileOptions.leveling``; only the ``acrobat`` policy reads it, and
    ``native`` (a runtime engine's native scheduler, ``(list_schedule, new_int64s)``: the
    same batches, sooner)."""
    fn = get_policy(policy)
    if fn is builtin_acrobat:
        return Schedule(policy, _acrobat(dfg, inline_depth, leveling, native))
    return Schedule(policy, fn(dfg, inline_depth))
