"""``python -m acrobat doctor``: what acrobat runs on here (:mod:`acrobat.doctor`)."""

from __future__ import annotations

import sys

from acrobat import doctor

COMMANDS = {"doctor": doctor.main}


def main(argv: list[str] | None = None) -> int:
    """Runs the command ``argv[0]`` names (``doctor``)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in COMMANDS:
        print(f"usage: python -m acrobat {{{','.join(COMMANDS)}}}", file=sys.stderr)
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
