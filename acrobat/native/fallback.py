"""Saying when native code is off: one :class:`NativeFallbackWarning` per process and
reason, naming what is off and why (``python -m acrobat doctor`` says it all at once)."""

from __future__ import annotations

import functools
import warnings


class NativeFallbackWarning(RuntimeWarning):
    """Part of acrobat's native code is off (or built another way) and something slower
    or less safe runs in its place; the results are the same up to float rounding."""


@functools.cache  # once per process and message, whatever the warning filters say
def warn_once(what: str, why: str, instead: str) -> None:
    """Warns that ``what`` is off because ``why``, and that ``instead`` runs."""
    warnings.warn(f"acrobat: {what} is off ({why}); {instead}", NativeFallbackWarning, stacklevel=4)
