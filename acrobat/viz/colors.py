"""One colour per scheduling policy, the same in every view, session and notebook.

The built-in policies have fixed colours (:data:`POLICY_COLORS`); any other name (a policy
registered by a user) gets a colour picked from :data:`EXTRA_COLORS` by a hash of its name
(``hashlib``, not ``hash()``, which changes between processes), so it too never changes
between views or sessions. Colours follow the policy's name, never its row or position.
"""

from __future__ import annotations

import hashlib

POLICY_COLORS: dict[str, str] = {
    "acrobat": "#0969da",  # blue
    "dynet-depth": "#d4a72c",  # amber
    "dynet-agenda": "#8250df",  # purple
    "eager": "#cf222e",  # red
}
"""The fixed colours of the registered policies."""

EXTRA_COLORS: tuple[str, ...] = (
    "#1a7f37",  # green
    "#bc4c00",  # orange
    "#0e8a8a",  # teal
    "#bf3989",  # pink
    "#6e7781",  # grey
    "#4d2d00",  # brown
    "#3e7b00",  # olive
    "#0550ae",  # dark blue
)
"""The colours other policy names are hashed onto (none is a fixed policy's colour)."""


def policy_color(name: str) -> str:
    """The colour of policy ``name``: fixed for the registered ones, else picked by a stable
    hash of the name (the same in every view and every session)."""
    fixed = POLICY_COLORS.get(name)
    if fixed is not None:
        return fixed
    digest = hashlib.sha1(name.encode("utf-8")).digest()
    return EXTRA_COLORS[int.from_bytes(digest[:4], "big") % len(EXTRA_COLORS)]


def policy_colors(names) -> dict[str, str]:
    """``{name: policy_color(name)}`` for the given policy names."""
    return {name: policy_color(name) for name in names}
