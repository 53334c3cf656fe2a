"""IR text -> HTML with syntax highlighting, in pure Python (no GUI imports, no JavaScript).

The highlighting is done on the server, so the page needs no editor library or CDN, and the
whole IR is in the DOM (searchable, testable). One regex with a named group per token kind.
"""

from __future__ import annotations

import html
import re

_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<keyword>\b(?:def|let|match|case|if|else|param|size|adt|entry|fn)\b)
  | (?P<special>\b(?:parallel|map|phase)\b)
  | (?P<global>@(?:\w+|"(?:[^"\\\n]|\\.)*"))
  | (?P<local>%(?:\w+|"(?:[^"\\\n]|\\.)*"))
  | (?P<param>\$(?:\w+|"(?:[^"\\\n]|\\.)*"))
  | (?P<type>\b[A-Z]\w*|\b(?:int|float|bool|int32|int64|float32|float64)\b)
  | (?P<op>\b[a-z_]\w*(?=\())
  | (?P<number>\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b)
    """,
    re.VERBOSE,
)


def scroll_box(height: int) -> str:
    """A stylesheet bounding the code blocks of one pane (``pre.acrobat-ir``, the diff, the
    kernel source) to ``height`` pixels: each block is then its own scroll box, with both
    scrollbars on screen, so a long line is reached by scrolling the block sideways (a
    taller block inside a bounded pane would put its horizontal scrollbar out of sight)."""
    return f":host {{ --code-max-height: {height}px; }}"


# The code blocks scroll inside themselves, up to --code-max-height (scroll_box): long lines
# stay whole and are reached sideways; the pane around them must not bound or clip them.
IR_CSS = """
pre.acrobat-ir { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 12.5px;
  line-height: 1.45; background: #fafafa; border: 1px solid #e1e4e8; border-radius: 4px;
  padding: 8px 12px; margin: 0; overflow: auto; white-space: pre; color: #24292e;
  max-height: var(--code-max-height, none); box-sizing: border-box; }
.acrobat-ir .ir-comment { color: #6a737d; font-style: italic; }
.acrobat-ir .ir-string { color: #032f62; }
.acrobat-ir .ir-keyword { color: #d73a49; font-weight: 600; }
.acrobat-ir .ir-special { color: #b31d28; font-weight: 600; }
.acrobat-ir .ir-global { color: #6f42c1; font-weight: 600; }
.acrobat-ir .ir-local { color: #005cc5; }
.acrobat-ir .ir-param { color: #e36209; }
.acrobat-ir .ir-type { color: #22863a; }
.acrobat-ir .ir-op { color: #5a32a3; }
.acrobat-ir .ir-number { color: #005cc5; }
"""


def highlight_ir(text: str) -> str:
    """The IR ``text`` as a ``<pre class="acrobat-ir">`` block with one ``<span>`` per token.

    Every character of ``text`` is kept and HTML-escaped, so the page shows exactly the IR."""
    out, pos = [], 0
    for match in _TOKEN.finditer(text):
        out.append(html.escape(text[pos : match.start()]))
        kind, token = match.lastgroup, html.escape(match.group())
        out.append(f'<span class="ir-{kind}">{token}</span>')
        pos = match.end()
    out.append(html.escape(text[pos:]))
    return f'<pre class="acrobat-ir"><code>{"".join(out)}</code></pre>'
