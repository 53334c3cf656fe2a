"""Command line: ``python -m acrobat.bench {run,paper,ablation,report,load-test,compile} ...``
(also ``acrobat-bench``). ``run`` prints one JSON row; ``paper`` and ``ablation`` write
JSON Lines (one row per configuration) with a progress bar on stderr; ``report`` turns
rows into CSV, a markdown table and a self-contained HTML page of bokeh plots;
``load-test`` times a model quiet and with one busy process beside it, interleaved, and
prints both spreads, their ratio and the BLAS thread policy used; ``compile`` prints a JSON
row per generated program (call chains, doubling calls, straight-line statements) with its
compile time, or the typed error that refused it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from acrobat import __version__
from acrobat.bench import compile_time, grid
from acrobat.bench.harness import DEFAULT_RUNS, DEFAULT_WARMUP, run_acrobat
from acrobat.bench.load import busy_cpu, load_test, report
from acrobat.bench.report import write_report
from acrobat.passes.options import OPTIMIZATIONS
from acrobat.runtime.schedule import policy_names
from acrobat.runtime.strategy import STRATEGIES

THREADS_HELP = "BLAS threads per launch: auto (default; ACROBAT_THREADS) or a count"


def _threads(text: str) -> int | None:
    return None if text == "auto" else int(text)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="acrobat-bench", description=__doc__)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one configuration -> one JSON row on stdout")
    r.add_argument("--model", required=True)
    r.add_argument("--size", default="small")
    r.add_argument("--batch", type=int, default=8)
    r.add_argument("--policy", default="acrobat", choices=policy_names())
    r.add_argument("--backend", default="numpy")
    r.add_argument("--disable", nargs="*", default=[], choices=OPTIMIZATIONS)
    r.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    r.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--decisions", default="tensor", choices=("tensor", "random"))
    r.add_argument("--threads", type=_threads, default=None, help=THREADS_HELP)
    r.add_argument("--strategy", default="auto", choices=STRATEGIES)
    lt = sub.add_parser("load-test", help="quiet vs one busy process beside it, interleaved")
    lt.add_argument("--model", default="treelstm")
    lt.add_argument("--size", default="small")
    lt.add_argument("--batch", type=int, default=64)
    lt.add_argument("--repeats", type=int, default=15)
    lt.add_argument("--warmup", type=int, default=3)
    lt.add_argument(
        "--threads",
        nargs="+",
        type=_threads,
        default=[None],
        help="thread settings to compare (auto or a count), each quiet and busy",
    )
    lt.add_argument(
        "--unpinned",
        action="store_true",
        help="let the busy process run on any CPU (default: pinned to the last one)",
    )
    for name, helptext in (("paper", "the paper's grid"), ("ablation", "each optimization off")):
        g = sub.add_parser(name, help=helptext)
        g.add_argument("--quick", action="store_true", help="tiny sizes, few runs (CI)")
        g.add_argument("--out", default=f"bench-results/{name}.jsonl")
        g.add_argument("--models", nargs="*", default=None)
        g.add_argument("--sizes", nargs="*", default=None)
        g.add_argument("--batches", nargs="*", type=int, default=None)
        g.add_argument("--runs", type=int, default=None)
        g.add_argument("--no-peers", action="store_true")
    c = sub.add_parser("compile", help="compile time against program size, one JSON row each")
    c.add_argument("--families", nargs="*", default=list(compile_time.FAMILIES))
    c.add_argument("--limit-s", type=float, default=compile_time.DEFAULT_LIMIT_S)
    rep = sub.add_parser("report", help="CSV + markdown + HTML from JSON Lines rows")
    rep.add_argument("inputs", nargs="+")
    rep.add_argument("--out", default="bench-results/report")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "run":
        row = run_acrobat(
            args.model,
            args.size,
            args.batch,
            args.policy,
            args.backend,
            tuple(args.disable),
            args.runs,
            args.warmup,
            args.seed,
            args.decisions,
            args.threads,
            args.strategy,
        )
        print(json.dumps(row))
        return 0
    if args.cmd == "load-test":
        m, facts = load_test(
            args.model,
            args.size,
            args.batch,
            tuple(args.threads),
            args.repeats,
            args.warmup,
            pin=not args.unpinned,
        )
        where = "anywhere" if args.unpinned else f"pinned to CPU {busy_cpu()}"
        print(
            f"{args.model} {args.size} b{args.batch}, {args.repeats} interleaved repeats, "
            f"the busy process {where}"
        )
        print(report(m, facts))
        return 0
    if args.cmd == "compile":
        rows = compile_time.run(args.families, args.limit_s)
        for row in rows:
            print(json.dumps(row))
        return 0 if all(row["within_limit"] for row in rows) else 1
    if args.cmd in ("paper", "ablation"):
        rows = grid.run_grid(args.cmd, args)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        problems = grid.check(rows, args.cmd)
        print(f"{len(rows)} rows -> {out}", file=sys.stderr)
        for p in problems:
            print("PROBLEM:", p, file=sys.stderr)
        return 1 if problems else 0
    paths = write_report([Path(p) for p in args.inputs], Path(args.out))
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
