"""Printing acrobat's big objects stays short: a one-line ``repr`` of at most 400 characters
and a small, escaped HTML table for notebooks (a TreeLSTM b64 run's repr was 298,775
characters before)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

import acrobat
from acrobat.reprs import MAX_REPR, html_summary, text_summary


class _Checker(HTMLParser):
    """Fails on an end tag that does not close the innermost open tag; counts cells."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.cells: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, f"</{tag}> closes nothing open"

    def handle_data(self, data):
        if self.open and self.open[-1] in ("th", "td"):
            self.cells.append(data)


def check_html(text: str) -> list[str]:
    """The cells of ``text``, a well-nested table with every tag closed."""
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert checker.open == [] and text.startswith("<table>"), text
    return checker.cells


@pytest.fixture(scope="module")
def treelstm_b64():
    spec = acrobat.models.load("treelstm", "small")
    prog = acrobat.compile(spec.module, spec.params)
    return spec.module, prog, acrobat.run(prog, spec.instances(64))


def test_every_big_object_prints_short_and_as_a_table(treelstm_b64):
    module, prog, res = treelstm_b64
    objects = {
        "RunResult": res,
        "RunStats": res.stats,
        "Trace": res.trace,
        "CompiledProgram": prog,
        "Module": module,
    }
    for kind, obj in objects.items():
        text = repr(obj)
        assert len(text) <= MAX_REPR and text.startswith(f"<{kind} "), text
        cells = check_html(obj._repr_html_())
        assert len(cells) >= 4, cells
    assert f"launches={res.stats.launches} (lower bound {res.stats.lower_bound})" in repr(res)
    assert "outputs=64" in repr(res) and f"trace={len(res.trace)} events" in repr(res)
    assert f"kernels={len(prog.kernels)}" in repr(prog)
    assert "entry=main" in repr(module) and len(str(module)) > MAX_REPR  # print shows the IR


def test_summaries_escape_user_strings_and_cut_long_values():
    items = [("name", "<script>alert(1)</script>"), ("long", "x" * 5000)]
    page = html_summary("Thing & co", items)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert check_html(page)[0] == "name"
    text = text_summary("Thing", items * 20)
    assert len(text) <= MAX_REPR and text.endswith("…>")
