"""``acrobat-bench compare A.jsonl B.jsonl``: two results files row by row, like
``pytest-benchmark --compare`` and asv's ``compare``.

Rows pair up by their configuration (``KEY``: system, model, size, batch, policy, what was
disabled, backend; ``--key`` picks others, e.g. to pair a grid with the same grid run with
an optimization off). Each pair gets B's median time over A's and a verdict: ``slower`` or
``faster`` only when the two interquartile ranges are apart *and* the medians differ by more
than :data:`THRESHOLD`; otherwise ``within noise``. A row without quartiles (the machine's
limits, timed without spreads) gets ``no IQR``: its ratio is shown, no verdict claimed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEY = ("system", "model", "size", "batch", "policy", "disabled", "backend")
THRESHOLD = 0.05
METRIC = "total_ms"


@dataclass(frozen=True)
class Pair:
    """One configuration in both files: its key, both medians and quartiles, the verdict."""

    key: tuple
    a: tuple[float, float | None, float | None]  # median, q1, q3
    b: tuple[float, float | None, float | None]
    ratio: float
    verdict: str  # "slower", "faster", "within noise" or "no IQR"


def _spread(row: dict[str, Any], metric: str) -> tuple[float, float | None, float | None]:
    stem = metric.removesuffix("_ms")
    return row[metric], row.get(f"{stem}_q1_ms"), row.get(f"{stem}_q3_ms")


def judge(a: tuple, b: tuple, threshold: float = THRESHOLD) -> tuple[float, str]:
    """(B's median / A's, the verdict) of two (median, q1, q3) triples."""
    ratio = b[0] / a[0] if a[0] > 0 else float("inf")
    if None in (a[1], a[2], b[1], b[2]):
        return ratio, "no IQR"
    if not (b[1] > a[2] or a[1] > b[2]) or abs(ratio - 1) <= threshold:
        return ratio, "within noise"
    return ratio, "slower" if ratio > 1 else "faster"


def pair_rows(
    rows_a: list[dict], rows_b: list[dict], key: tuple[str, ...] = KEY, metric: str = METRIC
) -> tuple[list[Pair], list[tuple], list[tuple]]:
    """(the pairs in A's order, keys only in A, keys only in B); rows without ``metric``
    (the machine's limits, failed peers) are left out."""

    def index(rows: list[dict]) -> dict[tuple, dict]:
        return {tuple(r.get(k) for k in key): r for r in rows if r.get(metric)}

    a, b = index(rows_a), index(rows_b)
    pairs = []
    for k, ra in a.items():
        if k in b:
            sa, sb = _spread(ra, metric), _spread(b[k], metric)
            pairs.append(Pair(k, sa, sb, *judge(sa, sb)))
    return pairs, [k for k in a if k not in b], [k for k in b if k not in a]


def _ms(s: tuple) -> str:
    q = f" ({s[1]:.3g}-{s[2]:.3g})" if s[1] is not None and s[2] is not None else ""
    return f"{s[0]:.3g}{q}"


def _about(name: str, meta: dict[str, Any]) -> str:
    if not meta:
        return f"{name}: no metadata row"
    commit = (meta.get("commit") or "?")[:10] + ("+changes" if meta.get("dirty") else "")
    return f"{name}: commit {commit}, {meta.get('date', '?')}, {meta.get('cpu', '?')}"


def report(
    paths: tuple[str, str],
    metas: tuple[dict, dict],
    pairs: list[Pair],
    only_a: list[tuple],
    only_b: list[tuple],
    key: tuple[str, ...] = KEY,
) -> str:
    """The comparison as text: where each file comes from, a line per pair, a tally."""
    lines = [_about(f"A {paths[0]}", metas[0]), _about(f"B {paths[1]}", metas[1]), ""]
    names = [" ".join(str(v) for v in p.key if v not in (None, "")) for p in pairs]
    width = max([len(n) for n in names] + [13])
    lines.append(
        f"{'configuration':<{width}}  {'A ms (IQR)':>22}  {'B ms (IQR)':>22}  B/A    verdict"
    )
    for name, p in zip(names, pairs):
        mark = {"slower": " <<", "faster": " >>"}.get(p.verdict, "")
        lines.append(
            f"{name:<{width}}  {_ms(p.a):>22}  {_ms(p.b):>22}  {p.ratio:5.2f}  {p.verdict}{mark}"
        )
    verdicts = ("within noise", "slower", "faster", "no IQR")
    counts = {v: sum(p.verdict == v for p in pairs) for v in verdicts}
    lines.append("")
    lines.append(
        f"{len(pairs)} pairs: {counts['within noise']} within noise, {counts['slower']} slower "
        f"in B, {counts['faster']} faster in B (IQRs apart and > {THRESHOLD:.0%}), "
        f"{counts['no IQR']} without IQRs; "
        f"only in A: {len(only_a)}, only in B: {len(only_b)} (paired on {', '.join(key)})"
    )
    return "\n".join(lines)
