"""``python -m acrobat.bench compile``: the issue's two programs compile in time or are refused
in time, each in its own child process."""

from __future__ import annotations

import pytest

from acrobat.bench import compile_time
from acrobat.bench.__main__ import main


@pytest.mark.parametrize("n", [12, 20])
def test_a_doubling_chain_compiles_within_the_limit(n):
    row = compile_time.measure("doubling", n)
    assert row["within_limit"] and "refused" not in row, row


def test_a_20000_statement_program_is_refused_with_a_typed_error_at_once():
    row = compile_time.measure("statements", 20_000)
    assert row["within_limit"] and row["refused"].startswith("SizeLimitError"), row
    assert row["total_s"] < 1.0


def test_the_command_prints_one_row_per_program(capsys, monkeypatch):
    monkeypatch.setitem(compile_time.SIZES, "chain", (3, 6))
    assert main(["compile", "--families", "chain"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2 and all('"family": "chain"' in r for r in rows)
