"""The lessons have one source each, ``tutorials/src/NN_*.md``; everything else is generated.

    python scripts/lessons.py              # notebooks, then execute them and render the texts
    python scripts/lessons.py 01 04        # the same for some lessons only
    python scripts/lessons.py --notebooks  # only the notebooks (fast: nothing runs)
    python scripts/lessons.py --check      # exit 1, naming what differs from its source

From a source it makes

* ``notebooks/NN_*.ipynb``: the notebook, stored without outputs (nbformat 4.5, stable cell
  ids, so regenerating an unchanged source changes nothing);
* ``tutorials/NN_*.md``: the text version, made by **executing** that notebook (nbclient, each
  cell within ``CELL_TIMEOUT_S``) and writing every cell with its outputs: printed text as
  ``text`` blocks, figures as images under ``tutorials/images/NN/`` (HTML and Bokeh outputs
  are drawn by headless Chromium through Playwright and saved as PNG), so a reader on a code
  host sees every number and picture.

Run it (or ``make notebooks``) after editing a source. tests/test_notebooks.py fails while a
stored notebook differs from what its source generates, or while a text version's source parts
(everything but the outputs, which vary from run to run) differ from its source. ``--check``
does the same without running anything.

A source is plain Markdown, read into cells by jupytext (its Markdown format; scripts/lessons.py
only handles the marks below, then hands jupytext the Markdown of one medium):

* a fenced ``python`` block is a code cell; the text between code cells is markdown, split into
  a cell per heading (and at two blank lines); a fenced block of any other language stays text;
* a code block inside ``<details><summary>Solution</summary>`` ... ``</details>`` becomes a
  folded solution cell (tag ``solution``, source hidden; folded in the text version too);
* ``<!-- notebook`` ... ``-->`` (each on a line of its own) holds cells for the notebook only,
  and ``<!-- text -->`` ... ``<!-- /text -->`` what only the text version shows (neither is
  needed while the text is rendered from the notebook; both are kept for exceptions);
* links to ``NN_*.md`` lessons point at the ``NN_*.ipynb`` notebooks in the notebook.

In the text version an output is wrapped in ``<!-- output -->`` ... ``<!-- /output -->``, which
is how the check tells outputs from the source.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import html
import io
import json
import os
import queue
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "tutorials" / "src"
TEXTS = ROOT / "tutorials"
IMAGES = TEXTS / "images"
NOTEBOOKS = ROOT / "notebooks"
LESSON = "[0-9][0-9]_*.md"

CELL_TIMEOUT_S = 120
SHELL_SLICE_S = 1.0
CANVAS_TIMEOUT_MS = 120_000  # BokehJS drawing a figure; slow on a loaded machine
KERNEL = "acrobat-lessons"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]

NOTEBOOK_OPEN, NOTEBOOK_CLOSE = "<!-- notebook", "-->"
TEXT_OPEN, TEXT_CLOSE = "<!-- text -->", "<!-- /text -->"
SOLUTION_OPEN, SOLUTION_CLOSE = "<details><summary>Solution</summary>", "</details>"
OUTPUT_OPEN, OUTPUT_CLOSE = "<!-- output -->", "<!-- /output -->"
FENCE_OPEN = re.compile(r"^```python\b")
FENCE_CLOSE = re.compile(r"^```[ \t]*$")
OTHER_FENCE = re.compile(r"^```(?!python\b)\w")
SOLUTION_FENCE = '```python tags=["solution"] jupyter={"source_hidden": true}'
# jupytext's Markdown format, a markdown cell per heading; the cell metadata a lesson may carry
JUPYTEXT_FORMAT = {"extension": ".md", "format_name": "markdown", "split_at_heading": True}
KEPT_METADATA = ("jupyter", "tags")
CELL_BREAK = ["", ""]  # two blank lines end a markdown cell in jupytext's Markdown
LESSON_LINK = re.compile(r"\]\((\d\d_[A-Za-z0-9_]+)\.md\)")
OUTPUT_REGION = re.compile(
    r"^" + re.escape(OUTPUT_OPEN) + r"\n.*?^" + re.escape(OUTPUT_CLOSE) + r"\n\n?",
    re.MULTILINE | re.DOTALL,
)
SOLUTION_META = {"jupyter": {"source_hidden": True}, "tags": ["solution"]}
WIDGET = "application/vnd.jupyter.widget-view+json"
METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python", "pygments_lexer": "ipython3"},
}


class LessonFormatError(ValueError):
    """A source's medium marks do not nest or close."""


class LessonRenderError(RuntimeError):
    """A lesson could not be rendered (a cell failed, or a figure could not be drawn)."""


# --- source -> cells ---------------------------------------------------------------------


def medium_markdown(text: str, name: str = "<lesson>", medium: str = "notebook") -> str:
    """A source as the plain Markdown that jupytext reads into ``medium``'s cells: the other
    medium's regions dropped, this medium's unwrapped (a mark ends a cell), a solution's fence
    tagged with the solution metadata, and a fenced block of another language kept as one
    Markdown cell (jupytext would make a ```bash block, say, a code cell)."""
    other = "text" if medium == "notebook" else "notebook"
    out: list[str] = []
    region = None  # None, "notebook" or "text"
    fence = None  # (where it opened, what closes it in the output) inside a fenced block
    solution = False
    for i, line in enumerate(text.split("\n")):
        where, stripped, keep = f"{name}:{i + 1}", line.strip(), [line]
        if fence is not None:  # inside a fenced block: verbatim
            if FENCE_CLOSE.match(line):
                keep, fence = [line, *fence[1]], None
        elif FENCE_OPEN.match(line):
            fence, keep = (where, []), [SOLUTION_FENCE if solution else line]
        elif OTHER_FENCE.match(line):
            fence, keep = (where, ["<!-- #endregion -->"]), ["<!-- #region -->", line]
        elif stripped in (NOTEBOOK_OPEN, TEXT_OPEN):
            if region is not None:
                raise LessonFormatError(f"{where}: {stripped} inside another region")
            region, keep = ("notebook" if stripped == NOTEBOOK_OPEN else "text"), CELL_BREAK
        elif (region, stripped) in (("notebook", NOTEBOOK_CLOSE), ("text", TEXT_CLOSE)):
            region, keep = None, CELL_BREAK
        elif stripped in (NOTEBOOK_CLOSE, TEXT_CLOSE):
            raise LessonFormatError(f"{where}: {stripped} closes no region")
        elif stripped == SOLUTION_OPEN or (stripped == SOLUTION_CLOSE and solution):
            solution, keep = stripped == SOLUTION_OPEN, CELL_BREAK
        if region != other or keep is CELL_BREAK:
            out += keep
    if fence is not None:
        raise LessonFormatError(f"{fence[0]}: a fenced block is not closed")
    if region is not None:
        raise LessonFormatError(f"{name}: a <!-- {region} region is not closed")
    return "\n".join(out)


def cells_of(text: str, name: str = "<lesson>", medium: str = "notebook") -> list[dict]:
    """The cells of a source for ``medium`` (``"notebook"`` or ``"text"``): (cell_type,
    source, metadata) dicts, in order, read by jupytext from :func:`medium_markdown`. Lesson
    links point at notebooks in the notebook."""
    import jupytext

    notebook = jupytext.reads(medium_markdown(text, name, medium), fmt=JUPYTEXT_FORMAT)
    cells = []
    for cell in notebook.cells:
        source = cell.source
        if cell.cell_type == "markdown":
            source = source.strip("\n")
            if not source.strip():
                continue
            if medium == "notebook":
                source = LESSON_LINK.sub(r"](\1.ipynb)", source)
        metadata = {key: cell.metadata[key] for key in KEPT_METADATA if key in cell.metadata}
        cells.append({"cell_type": cell.cell_type, "source": source, "metadata": metadata})
    return cells


def notebook_of(source: Path) -> dict:
    """The notebook (as JSON data) that a source generates."""
    cells = []
    for n, c in enumerate(cells_of(source.read_text(encoding="utf-8"), source.name)):
        cell = {"cell_type": c["cell_type"], "id": f"{source.stem[:2]}-{n:03d}"}
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


def lessons(only: list[str] | None = None) -> list[tuple[Path, Path, Path]]:
    """(source, notebook, text version) of every lesson (or of those whose number is in
    ``only``)."""
    out = []
    for source in sorted(SOURCES.glob(LESSON)):
        if only and source.stem[:2] not in only:
            continue
        out.append((source, NOTEBOOKS / f"{source.stem}.ipynb", TEXTS / source.name))
    return out


# --- executing a notebook -----------------------------------------------------------------


@contextlib.contextmanager
def kernel_here() -> Iterator[str]:
    """A kernelspec that runs this very interpreter (with its ipykernel), on ``JUPYTER_PATH``
    for the duration: a user-level ``python3`` kernel pointing at another Python cannot take
    over. Yields the kernel's name."""
    with tempfile.TemporaryDirectory() as root:
        spec = Path(root) / "kernels" / KERNEL
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec.joinpath("kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": "acrobat lessons", "language": "python"})
        )
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = root + (os.pathsep + old if old else "")
        try:
            yield KERNEL
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


def slice_shell_reads(kernel_client, slice_s: float = SHELL_SLICE_S) -> None:
    """Make the kernel client wait for shell replies in slices of ``slice_s`` seconds.

    nbclient waits for a cell's ``execute_reply`` with one ``poll`` of the shell socket that
    lasts the whole cell timeout. After a cell that opens widget comms (an ``interact`` cell),
    that poll can miss the reply's arrival and sleep until the timeout although the reply is
    there (jupyter/nbclient#312): a stall of the full per-cell limit. Polling again every
    ``slice_s`` seconds finds the waiting reply; the overall deadline is unchanged."""
    channel = kernel_client.shell_channel
    get_msg = channel.get_msg

    async def sliced_get_msg(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = slice_s if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await get_msg(timeout=min(slice_s, left))
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = sliced_get_msg


def execute(nb, workdir: Path, kernel: str | None = None):
    """Run a notebook (an ``nbformat`` node, changed in place: outputs kept) top to bottom in
    ``workdir``, each cell within ``CELL_TIMEOUT_S``; raises nbclient's CellExecutionError
    (with the cell and traceback) on failure. Without ``kernel``, on this interpreter."""
    from nbclient import NotebookClient

    with contextlib.ExitStack() as stack:
        if kernel is None:
            kernel = stack.enter_context(kernel_here())
        client = NotebookClient(
            nb,
            kernel_name=kernel,
            timeout=CELL_TIMEOUT_S,
            resources={"metadata": {"path": str(workdir)}},  # files it writes go here
        )
        client.on_notebook_start = lambda **_: slice_shell_reads(client.kc)
        client.execute()
    return nb


# --- figures ------------------------------------------------------------------------------

IFRAME = re.compile(r'<iframe srcdoc="([^"]*)"', re.DOTALL)
PAGE = "<!doctype html><meta charset='utf-8'><body style='margin:8px;background:#fff'>{}</body>"


class Camera:
    """Draws HTML outputs (Bokeh figures are standalone pages with inline BokehJS: no network)
    in one headless Chromium and saves them as PNG, cropped to what was drawn."""

    def __init__(self, width: int = 1100) -> None:
        from playwright.sync_api import sync_playwright

        if not Path(CHROMIUM).exists():
            raise LessonRenderError(f"{CHROMIUM} is missing: install Chromium (make setup)")
        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self._viewport = {"width": width, "height": 400}

    def close(self) -> None:
        self._browser.close()
        self._pw.stop()

    def png(self, fragment: str, path: Path) -> None:
        """Draw an HTML output (an ``acrobat.viz.widgets.show`` iframe of a Bokeh page, or an
        HTML fragment) into ``path``."""
        from PIL import Image, ImageChops

        framed = IFRAME.search(fragment)
        content = html.unescape(framed.group(1)) if framed else PAGE.format(fragment)
        page = self._browser.new_page(viewport=self._viewport)  # nothing left from the last one
        try:
            page.set_content(content, wait_until="load")
            if framed:  # BokehJS draws into canvases inside shadow roots (locators pierce them)
                page.locator("canvas").first.wait_for(state="attached", timeout=CANVAS_TIMEOUT_MS)
                page.wait_for_timeout(500)
            shot = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
        finally:
            page.close()
        box = ImageChops.difference(shot, Image.new("RGB", shot.size, "white")).getbbox()
        if box:
            left, top, right, bottom = box
            shot = shot.crop((max(0, left - 8), max(0, top - 8), right + 8, bottom + 8))
        path.parent.mkdir(parents=True, exist_ok=True)
        shot.save(path, optimize=True)


# --- notebook -> text ----------------------------------------------------------------------


def _text_block(text: str) -> list[str]:
    text = text.rstrip("\n")
    fence = "```" if "```" not in text else "````"
    return [f"{fence}text", text, fence] if text.strip() else []


def _output_lines(
    outputs: list, images: Path, stem: str, camera: Camera | None, where: str
) -> list[str]:
    """The Markdown of one code cell's outputs (images written under ``images``)."""
    lines: list[str] = []
    for k, out in enumerate(outputs):
        kind = out.get("output_type")
        if kind == "stream":
            lines += _text_block(out.get("text", ""))
        elif kind == "error":
            raise LessonRenderError(f"{where}: {out.get('ename')}: {out.get('evalue')}")
        elif kind in ("display_data", "execute_result"):
            data = out.get("data", {})
            name = f"{stem}-{k}"
            if WIDGET in data:
                lines.append("*(An interactive widget: run the notebook to use it.)*")
            elif "image/png" in data:
                (images / f"{name}.png").write_bytes(base64.b64decode(data["image/png"]))
                lines.append(f"![output](images/{images.name}/{name}.png)")
            elif "image/svg+xml" in data:
                (images / f"{name}.svg").write_text(data["image/svg+xml"], encoding="utf-8")
                lines.append(f"![output](images/{images.name}/{name}.svg)")
            elif "text/html" in data:
                if camera is None:
                    raise LessonRenderError(f"{where}: an HTML output needs the camera")
                camera.png(data["text/html"], images / f"{name}.png")
                lines.append(f"![output](images/{images.name}/{name}.png)")
            elif "text/markdown" in data:
                lines.append(data["text/markdown"])
            elif "text/plain" in data:
                lines += _text_block(data["text/plain"])
        if lines and lines[-1] != "":
            lines.append("")
    return lines


def header(source: Path) -> str:
    """The first lines of a text version: what it is and where it comes from."""
    nb = f"notebooks/{source.stem}.ipynb"
    return (
        f"<!-- Generated by scripts/lessons.py from tutorials/src/{source.name}: edit that, "
        "then run `make notebooks`. -->\n"
        f"*The text version of the notebook [`{nb}`](../{nb}), executed, with every output. "
        f"Its source is [`tutorials/src/{source.name}`](src/{source.name}); the outputs "
        "(times above all) are from one run on the machine that generated this page.*\n"
    )


def text_of(
    source: Path, executed=None, camera: Camera | None = None, images_root: Path = IMAGES
) -> str:
    """The text version of a lesson: its source's cells, each code cell followed by the
    outputs it had in ``executed`` (the executed notebook; ``None``: no outputs). Its figures
    go to ``images_root/NN/`` (emptied first), which the text links as ``images/NN/``."""
    text_cells = cells_of(source.read_text(encoding="utf-8"), source.name, medium="text")
    nb_cells = cells_of(source.read_text(encoding="utf-8"), source.name)
    code_outputs: list[list] = []
    if executed is not None:
        code_outputs = [c.get("outputs", []) for c in executed.cells if c.cell_type == "code"]
    images = images_root / source.stem[:2]
    if executed is not None and images.exists():
        shutil.rmtree(images)  # no stale figures
    if executed is not None:
        images.mkdir(parents=True)
    # the text's code cells are the notebook's, in order, less notebook-only ones and plus
    # text-only ones (which ran nowhere: no outputs)
    nb_sources = [c["source"] for c in nb_cells if c["cell_type"] == "code"]
    next_nb = 0
    lines = [header(source)]
    for n, cell in enumerate(text_cells):
        if cell["cell_type"] == "markdown":
            lines += [cell["source"], ""]
            continue
        solution = "solution" in cell["metadata"].get("tags", [])
        if solution:
            lines += [SOLUTION_OPEN, ""]
        lines += ["```python", cell["source"], "```", ""]
        index = next(
            (j for j in range(next_nb, len(nb_sources)) if nb_sources[j] == cell["source"]), None
        )
        if index is not None:
            next_nb = index + 1
        if executed is not None and index is not None and index < len(code_outputs):
            where = f"{source.name}, code cell {index + 1}"
            shown = _output_lines(
                code_outputs[index], images, f"{source.stem[:2]}-{n:03d}", camera, where
            )
            if shown:
                lines += [OUTPUT_OPEN, *shown[:-1], OUTPUT_CLOSE, ""]
        if solution:
            lines += [SOLUTION_CLOSE, ""]
    if executed is not None and not any(images.iterdir()):
        images.rmdir()
    return "\n".join(lines).rstrip("\n") + "\n"


def without_outputs(text: str) -> str:
    """A text version with its output regions removed: what its source alone determines."""
    return OUTPUT_REGION.sub("", text)


# --- main ---------------------------------------------------------------------------------


def stale(items) -> list[str]:
    """What differs from its source, without running anything."""
    out = []
    for source, notebook, text in items:
        have = notebook.read_text(encoding="utf-8") if notebook.exists() else None
        if have != render(notebook_of(source)):
            out.append(f"{notebook.relative_to(ROOT)} differs from its source")
        have = text.read_text(encoding="utf-8") if text.exists() else ""
        if without_outputs(have) != text_of(source):
            out.append(f"{text.relative_to(ROOT)} differs from its source")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lessons", nargs="*", help="lesson numbers (01 02 ...); all by default")
    ap.add_argument("--check", action="store_true", help="only report what differs")
    ap.add_argument("--notebooks", action="store_true", help="write the notebooks only")
    args = ap.parse_args(argv)
    items = lessons(args.lessons)
    if args.check:
        problems = stale(items)
        for p in problems:
            print(f"{p}: run scripts/lessons.py (make notebooks)")
        return 1 if problems else 0
    for source, notebook, _text in items:
        want = render(notebook_of(source))
        if not notebook.exists() or notebook.read_text(encoding="utf-8") != want:
            notebook.write_text(want, encoding="utf-8")
            print("wrote", notebook.relative_to(ROOT))
    if args.notebooks:
        return 0
    import nbformat

    camera = Camera()
    try:
        with kernel_here() as kernel:
            for source, notebook, text in items:
                t0 = time.perf_counter()
                nb = nbformat.read(notebook, as_version=4)
                with tempfile.TemporaryDirectory() as workdir:
                    execute(nb, Path(workdir), kernel)
                text.write_text(text_of(source, nb, camera), encoding="utf-8")
                took = time.perf_counter() - t0
                print(f"wrote {text.relative_to(ROOT)} (executed and rendered in {took:.1f} s)")
    finally:
        camera.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
