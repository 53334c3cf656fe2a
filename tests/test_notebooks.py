"""Teaching material: every notebook executes, is stored stripped, is what its tutorial
generates (scripts/lessons.py), and every tutorial runs.

``notebooks/NN_*.ipynb`` are executed top to bottom with nbclient on a kernel that runs this
interpreter (a kernelspec written to a temporary ``JUPYTER_PATH``, so a user-level ``python3``
kernel pointing at another Python cannot take over); a cell that raises fails the test with the
cell's source. ``tutorials/NN_*.md`` (same numbering, the text versions) have their ```python
blocks run in order in one namespace per tutorial, in a temporary directory (they write figure
files); a failing block fails the test naming the tutorial, the block and its line. Blocks
inside a tutorial's ``<!-- notebook ... -->`` regions belong to the notebook only and are skipped.
"""

from __future__ import annotations

import codeop
import importlib.util
import json
import queue
import re
import sys
import time
import traceback
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.md"))
CELL_TIMEOUT_S = 120
SHELL_SLICE_S = 1.0
KERNEL = "acrobat-tests"
FENCE = re.compile(r"^```python\b[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOTEBOOK_ONLY = re.compile(r"^<!-- notebook[ \t]*\n.*?^-->[ \t]*$", re.MULTILINE | re.DOTALL)


def _lessons():
    """scripts/lessons.py, the generator of the notebooks (a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("lessons", ROOT / "scripts" / "lessons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lessons = _lessons()


def _name(path: Path) -> str:
    return path.stem


def test_one_tutorial_per_notebook():
    assert len(NOTEBOOKS) >= 7, "notebooks 01..07 are missing"
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in TUTORIALS]
    assert [p.stem[:2] for p in NOTEBOOKS] == [f"{n:02d}" for n in range(1, len(NOTEBOOKS) + 1)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_is_stored_stripped(path):
    """No outputs, no execution counts, no saved widget state: diffs stay readable."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata, "saved widget state: clear it before committing"
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {n} has outputs: strip them"
            assert cell.execution_count is None, f"cell {n} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_is_generated_from_its_tutorial(path):
    """Cell by cell, the stored notebook is what its tutorial generates."""
    want = lessons.notebook_of(ROOT / "tutorials" / f"{path.stem}.md")
    have = json.loads(path.read_text(encoding="utf-8"))
    assert have["metadata"] == want["metadata"]
    assert len(have["cells"]) == len(want["cells"]), "run scripts/lessons.py (make notebooks)"
    for n, (h, w) in enumerate(zip(have["cells"], want["cells"])):
        assert h == w, f"cell {n} differs from the tutorial: run scripts/lessons.py"
    assert path.read_text(encoding="utf-8") == lessons.render(want), "run scripts/lessons.py"


def test_lesson_marks():
    text = (
        "# T\n<!-- text -->\nfor readers\n```python\nwrite()\n```\n<!-- /text -->\n"
        "intro, see [02](02_x.md)\n```python\nx = 1\n```\n## 2. Next\nmore\n"
        "<!-- notebook\n```python\ninteract()\n```\n-->\n"
        "<details><summary>Solution</summary>\n\n```python\ny = 2\n```\n\n</details>\n"
    )
    cells = [(c["cell_type"], c["source"], c["metadata"]) for c in lessons.cells_of(text)]
    assert cells == [
        ("markdown", "# T", {}),
        ("markdown", "intro, see [02](02_x.ipynb)", {}),
        ("code", "x = 1", {}),
        ("markdown", "## 2. Next\nmore", {}),
        ("code", "interact()", {}),
        ("code", "y = 2", {"jupyter": {"source_hidden": True}, "tags": ["solution"]}),
    ]
    assert [code for _, code in python_blocks(text)] == ["write()\n", "x = 1\n", "y = 2\n"]
    with pytest.raises(lessons.LessonFormatError):
        lessons.cells_of("<!-- text -->\nnever closed\n")


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A kernelspec that runs this very interpreter (with its ipykernel)."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "acrobat tests", "language": "python"})
    )
    return root


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


def execute_notebook(nb, workdir: Path, kernel: str = KERNEL) -> NotebookClient:
    """Run a notebook top to bottom in ``workdir`` (outputs kept in ``nb``), each cell within
    ``CELL_TIMEOUT_S``; raises CellExecutionError (with the cell and traceback) on failure."""
    client = NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(workdir)}},  # files the notebook writes go here
    )
    client.on_notebook_start = lambda **_: slice_shell_reads(client.kc)
    client.execute()
    return client


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_executes(path, tmp_path, kernel_dir, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    execute_notebook(nbformat.read(path, as_version=4), tmp_path)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a markdown text with the line each one starts on (the blocks of
    notebook-only regions left out)."""
    text = NOTEBOOK_ONLY.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # keeps line numbers
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


@pytest.mark.parametrize("path", TUTORIALS, ids=_name)
def test_tutorial_code_runs(path, tmp_path, monkeypatch):
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    assert blocks, f"{path.name} has no ```python blocks"
    monkeypatch.chdir(tmp_path)  # figures are written to the current directory
    namespace: dict = {"__name__": "__main__"}
    for n, (line, code) in enumerate(blocks, 1):
        where = f"{path.name}, code block {n} (line {line})"
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception:
            pytest.fail(f"{where} failed:\n{traceback.format_exc(limit=-3)}", pytrace=False)


def test_python_blocks_are_found():
    text = "intro\n```python\nx = 1\n```\ntext\n```text\nnot code\n```\n```python tags=[]\ny = x\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (10, "y = x\n")]
    assert python_blocks("```pythonic\nz = 1\n```\n") == []


def paste_errors(code: str) -> list[str]:
    """Where a block fails when pasted line by line into a plain ``python`` prompt: the
    interactive console compiles each statement as soon as it is complete, so an indented block
    (a loop, ``with``, ``def``) needs a blank line before the next unindented statement, and a
    blank line inside a function body ends the function. Nothing is executed; the block's end
    counts as one blank line (the reader presses Enter)."""
    errors, buffer = [], []
    for number, line in enumerate([*code.split("\n"), ""], 1):
        buffer.append(line)
        try:
            complete = codeop.compile_command("\n".join(buffer), "<stdin>", "single")
        except (SyntaxError, ValueError, OverflowError) as err:
            errors.append(f"line {number}: {line.strip()!r} ({type(err).__name__}: {err.msg})")
            buffer.clear()
            continue
        if complete is not None or not line.strip() and len(buffer) == 1:
            buffer.clear()
    return errors


def test_paste_errors_are_found():
    assert paste_errors("for i in range(2):\n    x = i\n\nprint(x)\n") == []
    assert paste_errors("for i in range(2):\n    x = i\nprint(x)\n") != []
    assert paste_errors("def f():\n    a = 1\n\n    return a\n") != []
    assert paste_errors('s = """\na\n\nb\n"""\nprint(s)\n') == []


@pytest.mark.parametrize("path", TUTORIALS, ids=_name)
def test_tutorial_blocks_paste_into_python(path):
    """Every block can be pasted into a plain ``python`` prompt as it is."""
    bad = []
    for line, code in python_blocks(path.read_text(encoding="utf-8")):
        bad += [f"block at line {line}, {e}" for e in paste_errors(code)]
    assert not bad, f"{path.name}: blocks that fail when pasted into python:\n" + "\n".join(bad)
