"""The recorded dataflow graph, in columns.

The host program appends one row per node to its kernel's record list, in the format
of :mod:`acrobat.codegen.records`: ``(key, out, instance, *args)``. :class:`DFG` holds
the rows not yet executed as one int64 array per kernel: cheap to record (no per-node
objects or arrays), cheap to schedule with NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from acrobat.codegen.records import ARGS, KEY, OUT


@dataclass
class KernelInfo:
    """What the DFG needs to know about a kernel."""

    name: str
    arg_batched: tuple[bool, ...]  # per argument: tensor value id (True) or host int
    n_outputs: int
    extra: int = 0  # columns after the arguments (a twin group's: the member, see executor)


@dataclass(slots=True)  # no __dict__: a fiber program makes ~100 a run
class DFG:
    """Pending nodes: ``records[k]`` is ``[N_k, ARGS + n_args]`` for kernel ``k``."""

    kernels: list[KernelInfo]
    records: list[np.ndarray]

    @property
    def num_nodes(self) -> int:
        return sum(len(r) for r in self.records)

    def all_nodes(self):
        """(kernel index, local index, out id, key) of every node, in recording order."""
        ks, ls, outs, keys = [], [], [], []
        for k, r in enumerate(self.records):
            if len(r):
                ks.append(np.full(len(r), k))
                ls.append(np.arange(len(r)))
                outs.append(r[:, OUT])
                keys.append(r[:, KEY])
        if not ks:
            e = np.zeros(0, np.int64)
            return e, e, e, e
        k, loc, out, key = (np.concatenate(x) for x in (ks, ls, outs, keys))
        order = np.argsort(out, kind="stable")  # value ids grow in recording order
        return k[order], loc[order], out[order], key[order]

    def edges(self):
        """Dependencies among this DFG's nodes, vectorized.

        Returns ``(kernel, local, key, src, dst)``: nodes in recording order (positions
        ``0..n-1``) and one edge ``src -> dst`` per tensor argument whose producer is in
        this DFG (inputs made by earlier passes or uploaded are already available).
        """
        k, loc, out, key = self.all_nodes()
        n = len(k)
        empty = np.zeros(0, np.int64)
        if n == 0:
            return k, loc, key, empty, empty
        n_out = np.array([ki.n_outputs for ki in self.kernels])[k]
        top = int((out + n_out).max())
        producer = np.full(top + 1, -1, np.int64)
        for j in range(int(n_out.max())):
            mask = n_out > j
            producer[out[mask] + j] = np.flatnonzero(mask)
        pos_of = [np.empty(len(r), np.int64) for r in self.records]
        for kk in range(len(self.records)):
            sel = k == kk
            pos_of[kk][loc[sel]] = np.flatnonzero(sel)
        srcs, dsts = [], []
        for kk, (ki, r) in enumerate(zip(self.kernels, self.records)):
            if not len(r):
                continue
            for a, batched in enumerate(ki.arg_batched):
                if not batched:
                    continue
                ids = r[:, ARGS + a]
                inside = ids <= top
                p = np.full(len(ids), -1, np.int64)
                p[inside] = producer[ids[inside]]
                ok = p >= 0
                srcs.append(p[ok])
                dsts.append(pos_of[kk][ok])
        src = np.concatenate(srcs) if srcs else empty
        dst = np.concatenate(dsts) if dsts else empty
        return k, loc, key, src, dst
