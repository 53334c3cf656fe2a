"""One colour per scheduling policy, the same in every view and every session."""

from __future__ import annotations

import zlib

# Okabe-Ito-like colours that stay apart for colour-blind readers, fixed per built-in policy.
POLICY_COLORS = {
    "acrobat": "#0072B2",
    "dynet-depth": "#E69F00",
    "dynet-agenda": "#009E73",
    "eager": "#CC79A7",
}
EXTRA = ("#D55E00", "#56B4E9", "#F0E442", "#7f7f7f", "#8c564b", "#17becf")


def policy_color(name: str) -> str:
    """The colour of ``name``: fixed for the built-in policies, else picked from ``EXTRA``
    by a stable hash of the name (the same in every view and every run)."""
    if name in POLICY_COLORS:
        return POLICY_COLORS[name]
    return EXTRA[zlib.crc32(name.encode()) % len(EXTRA)]
