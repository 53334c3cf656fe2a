"""Every saved fuzz case (``tests/fuzz/cases/*.json``) passes the differential check:
each policy, the default options and each optimization off, numpy and null backends."""

from pathlib import Path

import pytest

from acrobat.fuzz.cases import load
from acrobat.fuzz.check import check_program

CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_saved_case(path):
    case = load(path)
    result = check_program(case.source, case.instances, stop_at_first=False)
    assert result.ok, "\n".join(map(str, result.failures)) + f"\n(case: {case.note})"
    assert result.runs > 0


def test_cases_exist():
    assert len(CASES) >= 6
