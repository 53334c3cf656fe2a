"""The lessons have one source: ``tutorials/NN_*.md``; ``notebooks/NN_*.ipynb`` are generated.

    python scripts/lessons.py            # (re)write every notebook from its tutorial
    python scripts/lessons.py --check    # exit 1, naming the notebooks that differ

Run it (or ``make notebooks``) after editing a tutorial; tests/test_notebooks.py fails while a
stored notebook differs from what its tutorial generates. The tutorials are plain Markdown that
reads well on its own; a few marks say what belongs to one medium only:

* a fenced ``python`` block is a code cell; the text between code cells is markdown, split into
  one cell per ``## `` section;
* ``<!-- notebook`` ... ``-->`` (each on a line of its own) holds cells for the notebook only,
  such as interactive widgets: an HTML comment, so the text version neither shows nor runs them;
* ``<!-- text -->`` ... ``<!-- /text -->`` holds what only the text version needs, such as code
  that writes a figure to a file where the notebook shows it inline;
* a code block inside ``<details><summary>Solution</summary>`` ... ``</details>`` becomes a
  folded solution cell (tag ``solution``, source hidden);
* links to ``NN_*.md`` lessons point at the ``NN_*.ipynb`` notebooks instead.

Notebooks are written without outputs, in nbformat 4.5 with stable cell ids, so that
regenerating an unchanged tutorial changes nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
NOTEBOOKS = ROOT / "notebooks"
LESSON = "[0-9][0-9]_*.md"

NOTEBOOK_OPEN, NOTEBOOK_CLOSE = "<!-- notebook", "-->"
TEXT_OPEN, TEXT_CLOSE = "<!-- text -->", "<!-- /text -->"
SOLUTION_OPEN, SOLUTION_CLOSE = "<details><summary>Solution</summary>", "</details>"
FENCE_OPEN = re.compile(r"^```python\b")
FENCE_CLOSE = re.compile(r"^```[ \t]*$")
LESSON_LINK = re.compile(r"\]\((\d\d_[A-Za-z0-9_]+)\.md\)")
SOLUTION_META = {"jupyter": {"source_hidden": True}, "tags": ["solution"]}
METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python", "pygments_lexer": "ipython3"},
}


class LessonFormatError(ValueError):
    """A tutorial's medium marks do not nest or close."""


def cells_of(text: str, name: str = "<lesson>") -> list[dict]:
    """The notebook cells of a tutorial: (cell_type, source, metadata) dicts, in order."""
    cells: list[dict] = []
    prose: list[str] = []
    region = None  # None, "notebook" or "text"
    solution = False

    def flush_prose() -> None:
        text = "\n".join(prose).strip("\n")
        prose.clear()
        if text.strip():
            text = LESSON_LINK.sub(r"](\1.ipynb)", text)
            cells.append({"cell_type": "markdown", "source": text, "metadata": {}})

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        where = f"{name}:{i + 1}"
        stripped = line.strip()
        if FENCE_OPEN.match(line):
            end = next((j for j in range(i + 1, len(lines)) if FENCE_CLOSE.match(lines[j])), None)
            if end is None:
                raise LessonFormatError(f"{where}: a ```python block is not closed")
            flush_prose()
            if region != "text":
                meta = json.loads(json.dumps(SOLUTION_META)) if solution else {}
                source = "\n".join(lines[i + 1 : end])
                cells.append({"cell_type": "code", "source": source, "metadata": meta})
            i = end + 1
            continue
        if stripped in (NOTEBOOK_OPEN, TEXT_OPEN):
            if region is not None:
                raise LessonFormatError(f"{where}: {stripped} inside another region")
            flush_prose()
            region = "notebook" if stripped == NOTEBOOK_OPEN else "text"
        elif (region == "notebook" and stripped == NOTEBOOK_CLOSE) or (
            region == "text" and stripped == TEXT_CLOSE
        ):
            flush_prose()
            region = None
        elif stripped in (NOTEBOOK_CLOSE, TEXT_CLOSE):
            raise LessonFormatError(f"{where}: {stripped} closes no region")
        elif stripped == SOLUTION_OPEN:
            flush_prose()
            solution = True
        elif stripped == SOLUTION_CLOSE and solution:
            flush_prose()
            solution = False
        elif line.startswith("## "):
            if region != "text":
                flush_prose()
                prose.append(line)
        elif region != "text":
            prose.append(line)
        i += 1
    if region is not None:
        raise LessonFormatError(f"{name}: a <!-- {region} region is not closed")
    flush_prose()
    return cells


def notebook_of(tutorial: Path) -> dict:
    """The notebook (as JSON data) that a tutorial generates."""
    cells = []
    for n, c in enumerate(cells_of(tutorial.read_text(encoding="utf-8"), tutorial.name)):
        cell = {"cell_type": c["cell_type"], "id": f"{tutorial.stem[:2]}-{n:03d}"}
        cell["metadata"] = c["metadata"]
        if c["cell_type"] == "code":
            cell["execution_count"] = None
            cell["outputs"] = []
        cell["source"] = c["source"].splitlines(keepends=True)
        cells.append(cell)
    return {"cells": cells, "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5}


def render(nb: dict) -> str:
    """The stored form of a notebook: the JSON layout Jupyter itself writes."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def pairs() -> list[tuple[Path, Path]]:
    """(tutorial, notebook) for every lesson."""
    return [(t, NOTEBOOKS / f"{t.stem}.ipynb") for t in sorted(TUTORIALS.glob(LESSON))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only report notebooks that differ")
    args = ap.parse_args(argv)
    stale = []
    for tutorial, notebook in pairs():
        want = render(notebook_of(tutorial))
        have = notebook.read_text(encoding="utf-8") if notebook.exists() else None
        if want == have:
            continue
        stale.append(notebook)
        if not args.check:
            notebook.write_text(want, encoding="utf-8")
            print("wrote", notebook.relative_to(ROOT))
    if args.check and stale:
        for nb in stale:
            print(f"{nb.relative_to(ROOT)} differs from its tutorial: run scripts/lessons.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
