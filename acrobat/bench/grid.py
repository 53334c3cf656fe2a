"""The paper's grid and the ablation grid, with a progress bar, and completeness checks."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import acrobat
from acrobat.baselines.measure import measure
from acrobat.baselines.peers.runner import STRATEGIES, DynetPeer, PeerFailed, run_torch
from acrobat.bench.harness import (
    ACROBAT_METRICS,
    Case,
    acrobat_case,
    baseline_case,
    bench_instances,
    finite,
    sgemm_limit,
    stream_limit,
)
from acrobat.bench.progress import Progress
from acrobat.bench.report import LIMIT_SYSTEMS
from acrobat.models import MODEL_NAMES
from acrobat.passes.options import OPTIMIZATIONS
from acrobat.runtime.schedule import policy_names

PEER_MODELS = ("treelstm", "birnn")


def configs(kind: str, args) -> list[tuple]:
    quick = getattr(args, "quick", False)
    models = args.models or list(MODEL_NAMES)
    sizes = args.sizes or (["tiny"] if quick else ["small", "large"])
    batches = args.batches or ([2, 4] if quick else [8, 64])
    off = tuple(getattr(args, "disable", None) or ())  # a paper grid with optimizations off
    out = []
    for m in models:
        for s in sizes:
            for b in batches:
                if kind == "paper":
                    out += [("acrobat", m, s, b, p, off) for p in policy_names()]
                    out += [("baseline", m, s, b, k, ()) for k in ("eager-numpy", "hand-batched")]
                    if not args.no_peers and m in PEER_MODELS and not quick:
                        out += [
                            ("peer", m, s, b, k, ()) for k in ("torch", "off", "agenda", "depth")
                        ]
                else:
                    out.append(("acrobat", m, s, b, "acrobat", ()))
                    out += [("acrobat", m, s, b, "acrobat", (o,)) for o in OPTIMIZATIONS]
    return out


def run_grid(
    kind: str, args, on_row: Callable[[dict[str, Any]], None] | None = None
) -> list[dict[str, Any]]:
    """Every configuration of the grid -> rows. The acrobat, NumPy-baseline and DyNet
    configurations of one (model, size, batch) are measured together, interleaved
    (``acrobat.measure``: every round in another order, each configuration after a different
    one), so load that comes and goes hits them alike;
    each DyNet strategy runs in its own process, which waits between its turns
    (:class:`~acrobat.baselines.peers.runner.DynetPeer`). PyTorch, in this process with
    its own thread pool, is measured after them.

    ``on_row`` gets each row as soon as it is measured (the results file appends it: a grid
    stopped half-way keeps its rows); progress with an ETA goes to stderr
    (:class:`~acrobat.bench.progress.Progress`)."""
    quick = getattr(args, "quick", False)
    runs = args.runs or (1 if quick else 7)
    warmup = 1 if quick else 2
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row)

    emit(sgemm_limit(512 if quick else 2048))
    emit(stream_limit(32 if quick else 256))
    todo = configs(kind, args)
    groups: dict[tuple, list[tuple]] = {}
    for c in todo:
        groups.setdefault(c[1:4], []).append(c)
    progress = Progress(len(todo), "configurations", every=0)
    done = 0
    for (m, s, b), group in groups.items():
        progress.update(done, f"{m} {s} b{b} ({len(group)} configurations)")
        cases: dict[str, Case] = {}
        peers: dict[str, DynetPeer] = {}
        order: list[str] = []
        for what, _, _, _, p, disable in group:
            name = f"{what}:{p}:{','.join(disable)}"
            order.append(name)
            if what == "acrobat":
                cases[name] = acrobat_case(m, s, b, p, "numpy", disable)
            elif what == "baseline":
                case = baseline_case(p, m, s, b)
                if case is not None:
                    cases[name] = case
            elif what == "peer" and p in STRATEGIES:
                spec = acrobat.models.load(m, s)
                peers[name] = peer = DynetPeer(m, spec.params, bench_instances(spec, b, 0), p)
                if peer.ready:
                    cases[name] = Case(peer, peer.row)
        try:
            meas = None
            while cases:
                try:
                    meas = measure(
                        {n: c.fn for n, c in cases.items()},
                        repeats=runs,
                        warmup=warmup,
                        metrics=ACROBAT_METRICS,
                    )
                    break
                except PeerFailed as e:  # measure the rest again without it
                    e.peer.status = f"failed: {e}"
                    e.peer.close()
                    cases = {n: c for n, c in cases.items() if c.fn is not e.peer}
            for n in order:
                if n in peers:
                    emit({**peers[n].row(meas, n), "size": s, "batch": b, "backend": "cpu"})
                elif n in cases:
                    emit(cases[n].row(meas, n))
        finally:
            for peer in peers.values():
                peer.close()
        # free the group's programs and peers before PyTorch and the next group
        cases.clear()
        peers.clear()
        for what, _, _, _, p, _ in group:
            if what == "peer" and p == "torch":
                progress.update(done, f"{m} {s} b{b} {p}")
                emit(_torch_row(m, s, b, runs, warmup))
        done += len(group)
    progress.close(done)
    return rows


def _torch_row(model: str, size: str, batch: int, runs: int, warmup: int):
    spec = acrobat.models.load(model, size)
    row = run_torch(model, spec.params, bench_instances(spec, batch, 0), runs, warmup)
    row.update(size=size, batch=batch, backend="cpu")
    return row


def check(rows: list[dict[str, Any]], kind: str) -> list[str]:
    """Completeness: every configuration present, numbers finite, outputs equal across
    policies and baselines of one (model, size, batch)."""
    problems = []
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if not finite(r):
            problems.append(f"non-finite number in {r.get('system')} {r.get('model')}")
        if r.get("system") in LIMIT_SYSTEMS:
            continue
        groups.setdefault((r.get("model"), r.get("size"), r.get("batch")), []).append(r)
    for key, rs in groups.items():
        sums = [r["checksum"] for r in rs if "checksum" in r]
        if sums:
            ref = sums[0]
            for r, c in zip([r for r in rs if "checksum" in r], sums):
                if not math.isclose(c, ref, rel_tol=1e-3, abs_tol=1e-2):
                    problems.append(
                        f"{key}: {r['system']} {r.get('policy')} "
                        f"{r.get('disabled', '')} checksum {c} != {ref}"
                    )
        if kind == "paper":
            pols = {r["policy"] for r in rs if r["system"] == "acrobat"}
            if pols != set(policy_names()):
                problems.append(f"{key}: policies {sorted(pols)} missing some of {policy_names()}")
    return problems
