"""Command line: ``acrobat-bench`` (or ``python -m acrobat.bench``) with the subcommands
``run``, ``paper``, ``ablation``, ``report``, ``compare``, ``load-test`` and ``compile``; ``--help`` on
each lists its options with their defaults and choices. The grids write JSON Lines: a
metadata row (:mod:`acrobat.bench.results`), then each configuration's row as soon as it is
measured, so a grid stopped half-way keeps what it measured."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from acrobat.bench import compare, compile_time, grid
from acrobat.bench.cli import backend_names, command, model_names, parser, size_names
from acrobat.bench.harness import DEFAULT_RUNS, DEFAULT_WARMUP, run_acrobat
from acrobat.bench.load import busy_cpu, load_test, report
from acrobat.bench.report import write_report
from acrobat.bench.results import ResultsWriter, machine_metadata, read_results
from acrobat.models import MODEL_NAMES
from acrobat.passes.options import OPTIMIZATIONS
from acrobat.runtime.schedule import policy_names
from acrobat.runtime.strategy import STRATEGIES

DESCRIPTION = """\
Benchmark acrobat against its other policies, NumPy baselines and peer frameworks.

  run        one configuration -> one JSON row on stdout
  paper      the paper's grid -> JSON Lines, a row per configuration as it finishes
  ablation   the grid with each optimization off in turn -> JSON Lines
  report     CSV, markdown and an HTML page of plots from JSON Lines files
  compare    two results files row by row: B/A time ratio and a noise verdict
  load-test  one model timed quiet and beside a busy process, interleaved
  compile    compile time against program size, a JSON row per generated program
"""
THREADS_HELP = "BLAS threads per launch: auto (ACROBAT_THREADS, else by the load) or a count"


def _threads(text: str) -> int | None:
    if text == "auto":
        return None
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 'auto' or a positive count, not {text!r}")


def _add_run(sub) -> None:
    r = command(sub, "run", "one configuration -> one JSON row on stdout")
    r.add_argument("--model", required=True, choices=model_names(), help="built-in model")
    r.add_argument("--size", default="small", choices=size_names(), help="model size")
    r.add_argument("--batch", type=int, default=8, help="instances per run")
    r.add_argument("--policy", default="acrobat", choices=policy_names(), help="scheduling policy")
    r.add_argument("--backend", default="numpy", choices=backend_names(), help="kernel backend")
    r.add_argument(
        "--disable",
        nargs="*",
        default=[],
        choices=OPTIMIZATIONS,
        metavar="OPTIMIZATION",
        help=f"optimizations to turn off, of: {', '.join(OPTIMIZATIONS)}",
    )
    r.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="timed runs (medians, IQRs)")
    r.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed runs first")
    r.add_argument("--seed", type=int, default=0, help="seed of the inputs")
    r.add_argument(
        "--decisions",
        default="tensor",
        choices=("tensor", "random"),
        help="how models with data-dependent control flow decide (tensor values or seeded)",
    )
    r.add_argument("--threads", type=_threads, default="auto", help=THREADS_HELP)
    r.add_argument("--strategy", default="auto", choices=STRATEGIES, help="batched, direct or auto")


def _add_load_test(sub) -> None:
    lt = command(sub, "load-test", "quiet vs one busy process beside it, interleaved")
    lt.add_argument("--model", default="treelstm", choices=model_names(), help="built-in model")
    lt.add_argument("--size", default="small", choices=size_names(), help="model size")
    lt.add_argument("--batch", type=int, default=64, help="instances per run")
    lt.add_argument("--repeats", type=int, default=15, help="interleaved rounds")
    lt.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    lt.add_argument(
        "--threads",
        nargs="+",
        type=_threads,
        default=[None],
        help="thread settings to compare (auto or a count), each quiet and busy (default: auto)",
    )
    lt.add_argument(
        "--unpinned",
        action="store_true",
        help="let the busy process run on any CPU (default: pinned to the last one)",
    )


def _add_grids(sub) -> None:
    for name, helptext in (("paper", "the paper's grid"), ("ablation", "each optimization off")):
        g = command(sub, name, helptext)
        g.add_argument("--quick", action="store_true", help="tiny sizes, few runs (CI)")
        g.add_argument("--out", default=f"bench-results/{name}.jsonl", help="results file")
        g.add_argument(
            "--models",
            nargs="+",
            choices=MODEL_NAMES,
            metavar="MODEL",
            help=f"models, of: {', '.join(MODEL_NAMES)} (default: all)",
        )
        g.add_argument(
            "--sizes",
            nargs="+",
            choices=size_names(),
            help="sizes (default: small and large; tiny with --quick)",
        )
        g.add_argument(
            "--batches",
            nargs="+",
            type=int,
            help="batch sizes (default: 8 and 64; 2 and 4 with --quick)",
        )
        g.add_argument("--runs", type=int, help="timed runs (default: 7; 1 with --quick)")
        g.add_argument("--no-peers", action="store_true", help="leave out PyTorch and DyNet")
        if name == "paper":
            g.add_argument(
                "--disable",
                nargs="+",
                choices=OPTIMIZATIONS,
                metavar="OPTIMIZATION",
                help="optimizations off in every acrobat row: a slowed run, to compare with "
                "`compare A B --key system model size batch policy`",
            )


def _add_outputs(sub) -> None:
    rep = command(sub, "report", "CSV + markdown + HTML from JSON Lines rows")
    rep.add_argument("inputs", nargs="+", help="results files (JSON Lines)")
    rep.add_argument(
        "--out", default="bench-results/report", help="path stem of the .csv, .md and .html"
    )
    cmp = command(sub, "compare", "two results files row by row, with a noise verdict")
    cmp.add_argument("a", help="results file A (the baseline)")
    cmp.add_argument("b", help="results file B (compared with A: B/A)")
    cmp.add_argument(
        "--key",
        nargs="+",
        default=list(compare.KEY),
        help="row fields that pair a row of A with one of B (leave out disabled to pair a "
        "grid run with `paper --disable ...`)",
    )


def _add_compile(sub) -> None:
    c = command(sub, "compile", "compile time against program size, one JSON row each")
    c.add_argument(
        "--families",
        nargs="*",
        default=list(compile_time.FAMILIES),
        choices=compile_time.FAMILIES,
        help="generated program families (call chains, doubling calls, straight-line code)",
    )
    c.add_argument(
        "--limit-s",
        type=float,
        default=compile_time.DEFAULT_LIMIT_S,
        help="seconds a compile may take (exit 1 past it)",
    )


def _parser() -> argparse.ArgumentParser:
    p = parser("acrobat-bench", DESCRIPTION)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    _add_run(sub)
    _add_grids(sub)
    _add_outputs(sub)
    _add_load_test(sub)
    _add_compile(sub)
    return p


def _run(args) -> int:
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


def _load_test(args) -> int:
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


def _grid(args, argv: list[str]) -> int:
    """Rows go to the file as they are measured; Ctrl-C keeps the ones done."""
    out = Path(args.out)
    meta = machine_metadata(grid=args.cmd, argv=argv)
    with ResultsWriter(out, meta) as results:
        try:
            rows = grid.run_grid(args.cmd, args, on_row=results.append)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {results.rows} rows kept in {out}", file=sys.stderr)
            return 130
    problems = grid.check(rows, args.cmd)
    print(f"{len(rows)} rows -> {out}", file=sys.stderr)
    for p in problems:
        print("PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


def _compare(args) -> int:
    meta_a, rows_a = read_results(Path(args.a))
    meta_b, rows_b = read_results(Path(args.b))
    key = tuple(args.key)
    pairs, only_a, only_b = compare.pair_rows(rows_a, rows_b, key)
    print(compare.report((args.a, args.b), (meta_a, meta_b), pairs, only_a, only_b, key))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = _parser()
    args = p.parse_args(argv)
    if args.cmd == "run":
        return _run(args)
    if args.cmd == "load-test":
        return _load_test(args)
    if args.cmd in ("paper", "ablation"):
        return _grid(args, argv)
    if args.cmd == "compile":
        rows = compile_time.run(args.families, args.limit_s)
        for row in rows:
            print(json.dumps(row))
        return 0 if all(row["within_limit"] for row in rows) else 1
    try:
        if args.cmd == "compare":
            return _compare(args)
        for path in write_report([Path(x) for x in args.inputs], Path(args.out)):
            print(path)
    except (OSError, ValueError) as e:  # a missing or unreadable results file
        p.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
