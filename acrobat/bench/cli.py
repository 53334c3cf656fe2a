"""What acrobat's command lines share: help that shows each option's default, ``--version``,
and the names options accept where the set is known (models, sizes, backends)."""

from __future__ import annotations

import argparse

from acrobat import __version__
from acrobat.backends import backend_choices
from acrobat.models import MODEL_NAMES, VARIANTS, catalog


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps descriptions as written and appends ``(default: X)`` to an option's help when it
    has a default worth showing (not None, False or empty) and its help does not say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        unshown = default is None or default is False or default == argparse.SUPPRESS
        if "%(default)" in text or unshown or default in ([], ()):
            return text
        if isinstance(default, list | tuple):
            return f"{text} (default: {' '.join(map(str, default))})"
        return f"{text} (default: %(default)s)"


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A parser with :class:`HelpFormatter` and ``--version``."""
    p = argparse.ArgumentParser(prog=prog, description=description, formatter_class=HelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def command(subparsers, name: str, summary: str) -> argparse.ArgumentParser:
    """A subcommand with :class:`HelpFormatter`, ``summary`` as its help and description."""
    return subparsers.add_parser(
        name, help=summary, description=summary, formatter_class=HelpFormatter
    )


def model_names() -> tuple[str, ...]:
    """Every built-in model, variants included."""
    return MODEL_NAMES + VARIANTS


def size_names() -> tuple[str, ...]:
    """The named sizes the built-in models share, smallest first."""
    sizes = [info.sizes for info in catalog()]
    return tuple(s for s in sizes[0] if all(s in other for other in sizes))


def backend_names() -> tuple[str, ...]:
    """What ``--backend`` accepts (``auto`` included)."""
    return backend_choices()
