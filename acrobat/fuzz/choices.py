"""Choice sequences: the one source of randomness of the program fuzzer.

A generator asks a :class:`ChoiceSource` for small non-negative integers and nothing
else, so a generated program is a pure function of the list of choices it consumed.
That list can be replayed, and shrunk (:func:`shrink`) the way Hypothesis and minithesis
do: shorter sequences and smaller numbers mean smaller programs, because every generator
decision puts its simplest option at 0. A replay that runs past the end of its sequence
reads zeros, so any prefix is a valid (simpler) program too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

MAX_CHOICES = 20_000


class Exhausted(Exception):
    """The generator asked for more choices than :data:`MAX_CHOICES`."""


class ChoiceSource:
    """Draws choices from a seeded RNG (``seed``) or replays a recorded ``prefix``.

    ``choices`` is every value handed out so far, in order: replaying it yields the same
    program. Draw methods put the simplest option at 0.
    """

    def __init__(self, seed: int | None = None, prefix: Sequence[int] | None = None):
        self.rng = random.Random(seed) if prefix is None else None
        self.prefix = list(prefix or ())
        self.choices: list[int] = []

    def _draw(self, n: int) -> int:
        """A value in ``[0, n)``."""
        if n <= 1:
            return 0
        i = len(self.choices)
        if i >= MAX_CHOICES:
            raise Exhausted(f"more than {MAX_CHOICES} choices")
        if self.rng is not None:
            v = self.rng.randrange(n)
        else:
            v = min(self.prefix[i], n - 1) if i < len(self.prefix) else 0
        self.choices.append(v)
        return v

    def integer(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]``; ``lo`` is the simplest."""
        return lo + self._draw(hi - lo + 1)

    def boolean(self, p_true: float = 0.5) -> bool:
        """True with probability about ``p_true`` (from the RNG); False is the simplest."""
        if self.rng is not None and p_true != 0.5:
            i = len(self.choices)
            if i >= MAX_CHOICES:
                raise Exhausted(f"more than {MAX_CHOICES} choices")
            v = 1 if self.rng.random() < p_true else 0
            self.choices.append(v)
            return bool(v)
        return bool(self._draw(2))

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``; the first is the simplest."""
        return options[self._draw(len(options))]

    def weighted(self, options: Sequence[tuple[float, T]]) -> T:
        """One of ``options`` drawn by weight; the first is the simplest."""
        if self.rng is None or len(options) == 1:  # a lone option is no choice (as _draw)
            return options[self._draw(len(options))][1]
        total = sum(w for w, _ in options)
        x, acc, k = self.rng.random() * total, 0.0, len(options) - 1
        for j, (w, _) in enumerate(options):
            acc += w
            if x < acc:
                k = j
                break
        i = len(self.choices)
        if i >= MAX_CHOICES:
            raise Exhausted(f"more than {MAX_CHOICES} choices")
        self.choices.append(k)
        return options[k][1]


def shrink(
    choices: Sequence[int],
    still_fails: Callable[[list[int]], bool],
    budget: int = 400,
) -> list[int]:
    """A smaller choice sequence on which ``still_fails`` still holds.

    Greedy passes (as in minithesis): delete chunks, zero chunks, then lower single values
    by binary search; repeated while any pass makes progress and ``budget`` calls remain.
    """
    best = list(choices)
    calls = 0

    def attempt(c: list[int]) -> bool:
        nonlocal best, calls
        if calls >= budget or (len(c), c) >= (len(best), best):
            return False
        calls += 1
        if still_fails(c):
            best = c
            return True
        return False

    progress = True
    while progress and calls < budget:
        progress = False
        for size in (8, 4, 2, 1):
            i = len(best) - size
            while i >= 0 and calls < budget:
                if attempt(best[:i] + best[i + size :]):
                    progress = True
                i -= 1
        for size in (8, 4, 2, 1):
            i = len(best) - size
            while i >= 0 and calls < budget:
                if any(best[i : i + size]) and attempt(best[:i] + [0] * size + best[i + size :]):
                    progress = True
                i -= 1
        for i in reversed(range(len(best))):
            if calls >= budget:
                break
            lo, hi = 0, best[i]
            while lo < hi and calls < budget:
                mid = (lo + hi) // 2
                c = best[:i] + [mid] + best[i + 1 :]
                if attempt(c):
                    hi = mid
                    progress = True
                else:
                    lo = mid + 1
    while best and best[-1] == 0:
        best.pop()  # trailing zeros are what a replay reads anyway
    return best
