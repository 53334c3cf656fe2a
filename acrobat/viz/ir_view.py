"""IR view models: the program after each pipeline stage, a table of passes, and a diff.

Built from the compile trace's ``PassApplied`` events only: stage 0 is the parsed program (the
first pass's input), stage *k* is the IR after the *k*-th pass. Any two stages can be diffed
(``difflib`` unified diff), and the diff renders as HTML with added/removed lines coloured.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass

from acrobat.trace import PassApplied, Trace
from acrobat.viz.runner import pass_switches

DIFF_CSS = """
pre.acrobat-diff { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 12.5px;
  line-height: 1.45; background: #fafafa; border: 1px solid #e1e4e8; border-radius: 4px;
  padding: 8px 0; margin: 0; overflow: auto; white-space: pre; color: #24292e;
  max-height: var(--code-max-height, none); box-sizing: border-box; }
.acrobat-diff .diff-lines { display: inline-block; min-width: 100%; }
.acrobat-diff span { display: block; padding: 0 12px; }
.acrobat-diff .diff-add { background: #e6ffed; color: #22863a; }
.acrobat-diff .diff-del { background: #ffeef0; color: #b31d28; }
.acrobat-diff .diff-hunk { background: #f1f8ff; color: #6f42c1; }
.acrobat-diff .diff-file { color: #6a737d; font-weight: 600; }
"""


@dataclass(frozen=True)
class Stage:
    """One point of the pipeline: its position, a label for pickers, and the IR text."""

    index: int
    label: str
    text: str


@dataclass(frozen=True)
class PassDiff:
    """A unified diff between two stages: (kind, text) lines and the changed-line counts."""

    a_label: str
    b_label: str
    lines: tuple[tuple[str, str], ...]
    added: int
    removed: int

    @property
    def unchanged(self) -> bool:
        """True when the two stages print identically."""
        return self.added == 0 and self.removed == 0


def pipeline_stages(trace: Trace) -> list[Stage]:
    """Stage 0 (the parsed program) and one stage after each pass, in pipeline order."""
    passes = trace.of(PassApplied)
    if not passes:
        return []
    stages = [Stage(0, "0 · parsed", passes[0].before)]
    for step, applied in enumerate(passes, 1):
        stages.append(Stage(step, f"{step} · {applied.name}", applied.after))
    return stages


def pass_rows(trace: Trace) -> list[dict]:
    """One row per pass: step, name, the optimizations that switch it (their human labels, as
    the sidebar shows them), summary, milliseconds, lines added and removed."""
    rows = []
    for step, applied in enumerate(trace.of(PassApplied), 1):
        diff = _diff_lines(applied.before, applied.after, "", "")
        rows.append(
            {
                "step": step,
                "name": applied.name,
                "switches": pass_switches(applied.name),
                "summary": applied.summary or ("no change" if not diff else ""),
                "ms": round(applied.ms, 3),
                "added": sum(1 for kind, _ in diff if kind == "add"),
                "removed": sum(1 for kind, _ in diff if kind == "del"),
            }
        )
    return rows


def pass_diff(stages: list[Stage], a: int, b: int, context: int = 3) -> PassDiff:
    """The diff from stage ``a`` to stage ``b`` (any two stages, either order)."""
    first, second = stages[a], stages[b]
    lines = _diff_lines(first.text, second.text, first.label, second.label, context)
    added = sum(1 for kind, _ in lines if kind == "add")
    removed = sum(1 for kind, _ in lines if kind == "del")
    return PassDiff(first.label, second.label, tuple(lines), added, removed)


def _diff_lines(
    before: str, after: str, a_label: str, b_label: str, context: int = 3
) -> list[tuple[str, str]]:
    raw = difflib.unified_diff(
        before.splitlines(), after.splitlines(), a_label, b_label, n=context, lineterm=""
    )
    out = []
    for line in raw:
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out


def diff_html(diff: PassDiff) -> str:
    """The diff as ``<pre class="acrobat-diff">`` with one coloured line per diff line (in one
    block as wide as the longest line, so a line's colour follows it when scrolled sideways)."""
    if diff.unchanged:
        note = f"{diff.a_label} and {diff.b_label} print the same IR"
        return f'<pre class="acrobat-diff"><span class="diff-file">{html.escape(note)}</span></pre>'
    body = "".join(
        f'<span class="diff-{kind}">{html.escape(text) or " "}</span>' for kind, text in diff.lines
    )
    return f'<pre class="acrobat-diff"><div class="diff-lines">{body}</div></pre>'


def pass_table_html(rows: list[dict]) -> str:
    """The pass rows as a small HTML table (step, pass and the optimizations that switch it,
    what it did, lines +/-, ms)."""
    head = "<tr><th>#</th><th>pass <span class='switches'>switched by</span></th>"
    head += "<th>what it did</th><th>+</th><th>−</th><th>ms</th></tr>"
    body = "".join(
        f"<tr><td>{r['step']}</td><td><code>{html.escape(r['name'])}</code>"
        f"<div class='switches'>{html.escape(', '.join(r['switches'])) or 'always on'}</div></td>"
        f"<td>{html.escape(r['summary'])}</td><td class='num'>{r['added']}</td>"
        f"<td class='num'>{r['removed']}</td><td class='num'>{r['ms']:.2f}</td></tr>"
        for r in rows
    )
    return f'<table class="acrobat-table pass-table">{head}{body}</table>'


TABLE_CSS = """
table.acrobat-table { border-collapse: collapse; font-size: 13px; margin: 4px 0; }
.acrobat-table th, .acrobat-table td { border-bottom: 1px solid #e1e4e8; padding: 3px 10px;
  text-align: left; vertical-align: top; }
.acrobat-table th { background: #f6f8fa; font-weight: 600; }
.acrobat-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
.acrobat-table .switches { color: #57606a; font-size: 12px; font-weight: normal; }
th .switches::before { content: "· "; }
"""
