"""Short summaries of acrobat's big objects for the REPL and notebooks.

A run's outputs, trace and IR can hold hundreds of thousands of characters; printing one must
not flood a terminal or a notebook page. Each summarised class lists a few ``(label, value)``
pairs once, and these two functions render them: :func:`text_summary` as a one-line
``__repr__`` of at most :data:`MAX_REPR` characters, :func:`html_summary` as a small table for
``_repr_html_`` with every label and value escaped (values can hold user strings: names from a
program's source).
"""

from __future__ import annotations

import html
from collections.abc import Iterable

MAX_REPR = 400
MAX_VALUE = 80  # characters of one value before it is cut with an ellipsis

Summary = Iterable[tuple[str, object]]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_summary(kind: str, items: Summary) -> str:
    """``<kind label=value, ...>`` in at most :data:`MAX_REPR` characters."""
    body = ", ".join(f"{label}={_clip(str(value), MAX_VALUE)}" for label, value in items)
    return f"<{kind} {_clip(body, MAX_REPR - len(kind) - 3)}>"


def html_summary(kind: str, items: Summary) -> str:
    """A two-column HTML table (label, value) captioned ``kind``, every cell escaped."""
    rows = "".join(
        f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
        f"<td style='text-align:left'>{html.escape(_clip(str(value), MAX_VALUE))}</td></tr>"
        for label, value in items
    )
    return f"<table><caption>{html.escape(kind)}</caption><tbody>{rows}</tbody></table>"


def counted(counts: dict[str, int], most: int = 4) -> str:
    """``"a 12, b 3, +2 more"``: the ``most`` largest counts, the rest as a number."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{name} {n}" for name, n in ranked[:most])
    rest = len(ranked) - most
    return shown + (f", +{rest} more" if rest > 0 else "")
