"""``python -m acrobat doctor``: what acrobat runs on here (:mod:`acrobat.doctor`)."""

from __future__ import annotations

import argparse
import sys

from acrobat import __version__, doctor

COMMANDS = {"doctor": (doctor.main, "what acrobat runs on here, and what is off and why")}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m acrobat",
        description="acrobat's own commands (also: acrobat-bench, acrobat-fuzz, acrobat-explorer).",
    )
    p.add_argument("--version", action="version", version=f"acrobat {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for name, (_, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, description=summary)
    return p


def main(argv: list[str] | None = None) -> int:
    """Runs the command ``argv[0]`` names (``doctor``); an unknown one is a usage error."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    return COMMANDS[args.command][0]([])


if __name__ == "__main__":
    sys.exit(main())
