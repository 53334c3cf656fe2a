"""Cancelling a run from another thread: :class:`CancelToken`.

``acrobat.run(..., cancel=token)``; ``token.set()`` from any thread (a GUI's Cancel button)
and the run raises :class:`acrobat.errors.RunCancelled` at its next check: before each kernel
launch (the Python executor's loop, and the native ``run_flush`` / ``schedule_flush`` and the
compiled fiber program's flush in ``acrobat/native/flush.c``), before each flush, and before
each instance the host program or the direct strategy starts. The flag is one byte the token
owns, which the native flush reads between launches (no Python call per launch). Like a
``threading.Event`` it has ``set()`` and ``is_set()``; a set token stays set.
"""

from __future__ import annotations

from acrobat.errors import RunCancelled


class CancelToken:
    """A flag that cancels the runs given it (``acrobat.run(..., cancel=token)``)."""

    __slots__ = ("flag",)

    def __init__(self) -> None:
        self.flag = bytearray(1)  # 1 once set; read by the native flush between launches

    def set(self) -> None:
        """Cancel: every run given this token stops at its next check."""
        self.flag[0] = 1

    def is_set(self) -> bool:
        """Whether :meth:`set` was called."""
        return bool(self.flag[0])

    def __repr__(self) -> str:
        return f"CancelToken({'set' if self.flag[0] else 'clear'})"


def check(flag: bytearray | None) -> None:
    """Raise :class:`RunCancelled` if ``flag`` (a token's, or None: not cancellable) is set."""
    if flag is not None and flag[0]:
        raise RunCancelled()
