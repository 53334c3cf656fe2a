"""One registry type for everything acrobat registers by name: ops, scheduling policies,
backends and explorer views.

A :class:`Registry` is a ``dict`` (name -> entry, in registration order) that knows what it
holds, so every registry refuses a second entry under one name and answers an unknown
name the same way: an :class:`~acrobat.errors.AcrobatNameError` listing the names it has.
"""

from __future__ import annotations

from typing import TypeVar

from acrobat.errors import AcrobatNameError

T = TypeVar("T")


class Registry(dict[str, T]):
    """Entries by name, in registration order; ``what`` names one entry in messages."""

    def __init__(self, what: str):
        super().__init__()
        self.what = what

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` as ``name``; a name registered already is an error."""
        self.check_free(name)
        self[name] = entry
        return entry

    def check_free(self, name: str) -> None:
        """Raise the error of a second registration if ``name`` is taken (for registrations
        that check everything before they build their entry)."""
        if name in self:
            raise AcrobatNameError(
                f"{self.what} {name!r} is registered twice",
                hint="pick another name, or unregister the old one first",
            )

    def lookup(self, name: str) -> T:
        """The entry of ``name``; an unknown name is an error that lists the known ones."""
        try:
            return self[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            raise AcrobatNameError(
                f"unknown {self.what} {name!r}", hint=f"choose one of {self.names()}"
            ) from None

    def remove(self, name: str) -> T:
        """Unregister ``name`` (unknown: the error of :meth:`lookup`); returns its entry."""
        entry = self.lookup(name)
        del self[name]
        return entry

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self)


__all__ = ["Registry"]
