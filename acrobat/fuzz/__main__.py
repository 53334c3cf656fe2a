"""``python -m acrobat.fuzz``: a fuzzing campaign from the command line.

    python -m acrobat.fuzz --minutes 30 --seed 1          # long run
    python -m acrobat.fuzz --programs 200 --seed 0        # fixed amount of work

Exits 1 if any case broke the contract (each minimized and saved as a JSON case under
``--out``, by default ``tests/fuzz/cases`` when run from the repository, where the test
suite re-checks it), else 0. Prints programs per second and the op and feature coverage
reached; the last line is a one-line summary.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from acrobat.bench.cli import parser
from acrobat.bench.progress import Progress
from acrobat.fuzz.campaign import Report, run_campaign


def _default_out() -> Path:
    repo_cases = Path("tests/fuzz/cases")
    return repo_cases if repo_cases.is_dir() else Path("fuzz-cases")


def _parser() -> argparse.ArgumentParser:
    ap = parser(
        "acrobat-fuzz",
        "Differential fuzzing: random programs run batched and one instance at a time must "
        "agree. Exits 1 if any case broke that (each minimized and saved under --out).",
    )
    ap.add_argument("--minutes", type=float, help="stop after this many minutes")
    ap.add_argument(
        "--programs",
        type=int,
        help="stop after this many programs (default: 100 when --minutes is not given)",
    )
    ap.add_argument("--seed", type=int, default=0, help="campaign seed")
    ap.add_argument(
        "--out",
        type=Path,
        help="where minimized failures are saved (default: tests/fuzz/cases in a checkout, "
        "else fuzz-cases)",
    )
    ap.add_argument("--shrink-budget", type=int, default=300, help="checks spent per shrink")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.minutes is None and args.programs is None:
        args.programs = 100
    out = args.out or _default_out()
    limit = args.minutes * 60 if args.minutes is not None else None
    bar = None if args.quiet else Progress(args.programs, "programs", deadline_s=limit)

    def progress(r: Report) -> None:
        if bar is not None:  # a skipped or rejected draw counts toward --programs too
            bar.update(r.programs + len(r.slow_seeds) + r.rejected, r.summary())

    report = run_campaign(
        args.seed,
        programs=args.programs,
        minutes=args.minutes,
        out=out,
        shrink_budget=args.shrink_budget,
        progress=progress,
    )
    if bar is not None:
        bar.close()
    _print_report(report)
    return 1 if report.failures else 0


def _print_report(r: Report) -> None:
    print(f"seconds: {r.seconds:.1f}; programs: {r.programs}; batched runs: {r.runs}")
    print(f"instances refused by the interpreter with a typed error: {r.reference_errors}")
    print(f"slow cases skipped: {r.slow}; programs the frontend rejected: {r.rejected}")
    if r.slow_seeds:  # draw_case(ChoiceSource(seed=s)) reproduces one
        print(f"slow case seeds: {', '.join(map(str, r.slow_seeds))}")
    used = ", ".join(f"{op} {n}" for op, n in sorted(r.ops.items()))
    print(f"ops used (programs): {used}")
    missing = r.missing_ops()
    print(f"ops never used: {', '.join(missing) if missing else 'none'}")
    shapes = [f for f in r.features if f.startswith("bcast:(")]  # one per shape pair
    feats = ", ".join(
        f"{f} {n}" for f, n in sorted(r.features.items()) if not f.startswith(("op:", "bcast:("))
    )
    print(f"features (programs): {feats}")
    print(f"broadcast shape pairs seen: {len(shapes)}")
    for failure, path in r.failures:
        print(f"FAILURE {failure}" + (f"\n  saved: {path}" if path else ""))
    print(r.summary())


if __name__ == "__main__":
    sys.exit(main())
