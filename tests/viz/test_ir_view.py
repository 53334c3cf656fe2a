"""IR view models: pipeline stages, the pass table, and a diff between any two stages."""

import difflib
import html
import re

from acrobat.trace import PassApplied, Trace
from acrobat.viz.ir_view import (
    diff_html,
    pass_diff,
    pass_rows,
    pass_table_html,
    pipeline_stages,
)


def test_one_stage_per_pass_plus_the_parsed_program(treelstm):
    passes = treelstm.compile.of(PassApplied)
    stages = pipeline_stages(treelstm.compile)
    assert len(stages) == len(passes) + 1
    assert stages[0].text == passes[0].before and stages[0].label == "0 · parsed"
    for stage, applied in zip(stages[1:], passes):
        assert stage.text == applied.after
        assert stage.label == f"{stage.index} · {applied.name}"
    assert pipeline_stages(Trace()) == []


def test_pass_rows_count_changed_lines(treelstm):
    passes = treelstm.compile.of(PassApplied)
    rows = pass_rows(treelstm.compile)
    assert [r["name"] for r in rows] == [p.name for p in passes]
    for row, applied in zip(rows, passes):
        ndiff = list(difflib.ndiff(applied.before.splitlines(), applied.after.splitlines()))
        assert row["added"] == sum(1 for line in ndiff if line.startswith("+ "))
        assert row["removed"] == sum(1 for line in ndiff if line.startswith("- "))
        if row["added"] == row["removed"] == 0 and not applied.summary:
            assert row["summary"] == "no change"
    assert any(r["added"] for r in rows), "some pass must change the treelstm IR"


def test_diff_between_any_two_stages(treelstm):
    stages = pipeline_stages(treelstm.compile)
    last = len(stages) - 1
    forward = pass_diff(stages, 0, last)
    backward = pass_diff(stages, last, 0)
    assert not forward.unchanged
    assert (forward.added, forward.removed) == (backward.removed, backward.added)
    kinds = {kind for kind, _ in forward.lines}
    assert {"file", "hunk", "add", "del"} <= kinds
    added = [text[1:] for kind, text in forward.lines if kind == "add"]
    assert all(line in stages[last].text.splitlines() for line in added)
    assert forward.a_label == stages[0].label and forward.b_label == stages[last].label


def test_same_stage_diff_is_unchanged_and_says_so(treelstm):
    stages = pipeline_stages(treelstm.compile)
    same = pass_diff(stages, 3, 3)
    assert same.unchanged and same.lines == ()
    assert "print the same IR" in diff_html(same)


def test_diff_html_escapes_and_colours_every_line(treelstm):
    stages = pipeline_stages(treelstm.compile)
    diff = pass_diff(stages, 0, len(stages) - 1, context=1)
    page = diff_html(diff)
    assert page.count('class="diff-add"') == diff.added
    assert page.count('class="diff-del"') == diff.removed
    shown = html.unescape(re.sub(r"<[^>]+>", "\n", page))
    assert all(text in shown for _, text in diff.lines if text.strip())
    assert "<script" not in diff_html(pass_diff(_stages("<script>"), 0, 1))


def _stages(evil):
    return pipeline_stages(Trace([PassApplied("P", "a\n", f"a\n{evil}\n")]))


def test_pass_table_has_a_row_per_pass(treelstm):
    rows = pass_rows(treelstm.compile)
    table = pass_table_html(rows)
    assert table.count("<tr>") == len(rows) + 1
    assert all(f"<code>{r['name']}</code>" in table for r in rows)
