"""Teaching material: every lesson has one source, ``tutorials/src/NN_*.md``; the notebook
``notebooks/NN_*.ipynb`` is what it generates (stored stripped) and executes top to bottom; the
text version ``tutorials/NN_*.md`` is the executed notebook rendered with its outputs, and
everything in it but the outputs is what the source says (scripts/lessons.py makes all three).

Notebooks run with nbclient on a kernel that runs this interpreter (a kernelspec on a temporary
``JUPYTER_PATH``, so a user-level ``python3`` kernel pointing at another Python cannot take over),
each cell within ``lessons.CELL_TIMEOUT_S``; a cell that raises fails the test with the cell's
source. Every source's ```python blocks also paste into a plain ``python`` prompt as they are.
"""

from __future__ import annotations

import base64
import codeop
import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "tutorials" / "src").glob("[0-9][0-9]_*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
TEXTS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.md"))
FENCE = re.compile(r"^```python\b[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")  # relative links: no scheme


def _lessons():
    """scripts/lessons.py, the generator of the notebooks (a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("lessons", ROOT / "scripts" / "lessons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lessons = _lessons()


def _name(path: Path) -> str:
    return path.stem


def test_one_source_per_notebook_and_text():
    assert len(SOURCES) >= 7, "lessons 01..07 are missing"
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in SOURCES]
    assert [p.stem for p in TEXTS] == [p.stem for p in SOURCES]
    assert [p.stem[:2] for p in SOURCES] == [f"{n:02d}" for n in range(1, len(SOURCES) + 1)]


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
def test_notebook_is_generated_from_its_source(path):
    """Cell by cell, the stored notebook is what its source generates."""
    want = lessons.notebook_of(ROOT / "tutorials" / "src" / f"{path.stem}.md")
    have = json.loads(path.read_text(encoding="utf-8"))
    assert have["metadata"] == want["metadata"]
    assert len(have["cells"]) == len(want["cells"]), "run scripts/lessons.py (make notebooks)"
    for n, (h, w) in enumerate(zip(have["cells"], want["cells"])):
        assert h == w, f"cell {n} differs from the source: run scripts/lessons.py"
    assert path.read_text(encoding="utf-8") == lessons.render(want), "run scripts/lessons.py"


@pytest.mark.parametrize("path", TEXTS, ids=_name)
def test_text_is_rendered_from_its_source(path):
    """The text version is its source's cells (outputs aside) and shows outputs and figures
    that exist; the outputs themselves (times) vary from run to run and are not compared."""
    text = path.read_text(encoding="utf-8")
    want = lessons.text_of(ROOT / "tutorials" / "src" / path.name)
    assert lessons.without_outputs(text) == want, (
        f"{path.name} differs from tutorials/src/{path.name}: run scripts/lessons.py "
        "(make notebooks)"
    )
    assert text.count(lessons.OUTPUT_OPEN) >= 5, "the text shows (almost) no outputs"
    missing = [i for i in IMAGE.findall(text) if not (path.parent / i).exists()]
    assert not missing, f"{path.name} shows images that do not exist: {missing}"
    broken = [t for t in LINK.findall(text) if not (path.parent / t).exists()]
    assert not broken, f"{path.name} links to files that do not exist: {broken}"
    used = {(path.parent / i).resolve() for i in IMAGE.findall(text)}
    folder = ROOT / "tutorials" / "images" / path.stem[:2]
    unused = [p.name for p in folder.glob("*") if p.resolve() not in used]
    assert not unused, f"images no text shows (stale): {unused}"


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
    text_cells = [(c["cell_type"], c["source"]) for c in lessons.cells_of(text, medium="text")]
    assert text_cells == [
        ("markdown", "# T"),
        ("markdown", "for readers"),
        ("code", "write()"),
        ("markdown", "intro, see [02](02_x.md)"),
        ("code", "x = 1"),
        ("markdown", "## 2. Next\nmore"),
        ("code", "y = 2"),
    ]
    with pytest.raises(lessons.LessonFormatError):
        lessons.cells_of("<!-- text -->\nnever closed\n")
    with pytest.raises(lessons.LessonFormatError, match="not closed"):
        lessons.cells_of("```python\nx = 1\n")
    other = "Run it:\n\n```bash\nmake notebooks\n```\n\n```text\n-->\n```\n"
    assert [c["cell_type"] for c in lessons.cells_of(other)] == ["markdown"] * 3
    assert "make notebooks" in lessons.cells_of(other)[1]["source"]


def test_text_rendering(tmp_path):
    """Outputs become text blocks, images and a note for widgets, wrapped in output marks that
    ``without_outputs`` removes; a solution stays folded; an error output fails."""
    source = tmp_path / "09_demo.md"
    source.write_text(
        "# Demo\n\nsee [01](01_a.md)\n\n```python\nprint('hi')\n```\n\n```python\nshow()\n```\n"
        "\n<details><summary>Solution</summary>\n\n```python\nanswer = 42\n```\n\n</details>\n"
    )
    nb = nbformat.from_dict(lessons.notebook_of(source))
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    code = [c for c in nb.cells if c.cell_type == "code"]
    code[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    code[1].outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<fig>"}),
        nbformat.v4.new_output("display_data", data={lessons.WIDGET: {}, "text/plain": "w"}),
    ]
    text = lessons.text_of(source, nb, camera=None, images_root=tmp_path / "images")
    assert "```text\nhi\n```" in text
    assert "![output](images/09/09-002-0.png)" in text
    assert (tmp_path / "images" / "09" / "09-002-0.png").read_bytes().startswith(b"\x89PNG")
    assert "interactive widget" in text
    assert "see [01](01_a.md)" in text  # lesson links stay on the text versions
    assert "<details><summary>Solution</summary>\n\n```python\nanswer = 42\n```" in text
    assert lessons.without_outputs(text) == lessons.text_of(source)
    code[0].outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="x")]
    with pytest.raises(lessons.LessonRenderError, match="ValueError"):
        lessons.text_of(source, nb, camera=None, images_root=tmp_path / "images")


@pytest.fixture(scope="module")
def kernel():
    with lessons.kernel_here() as name:
        yield name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_notebook_executes(path, tmp_path, kernel):
    lessons.execute(nbformat.read(path, as_version=4), tmp_path, kernel)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a markdown text with the line each one starts on."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


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


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_source_blocks_paste_into_python(path):
    """Every block can be pasted into a plain ``python`` prompt as it is."""
    bad = []
    for line, code in python_blocks(path.read_text(encoding="utf-8")):
        bad += [f"block at line {line}, {e}" for e in paste_errors(code)]
    assert not bad, f"{path.name}: blocks that fail when pasted into python:\n" + "\n".join(bad)
