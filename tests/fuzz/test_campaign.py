"""The fuzzer itself: the CI budget campaign (fixed seed), Hypothesis-driven programs,
the shrinker, and the command line (exit codes, minimized cases saved and re-checkable)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acrobat.fuzz.campaign as campaign
from acrobat.fuzz.__main__ import main as fuzz_main
from acrobat.fuzz.cases import load
from acrobat.fuzz.check import Failure, check_program
from acrobat.fuzz.choices import ChoiceSource, shrink

CI_PROGRAMS = 40  # the default suite (about a minute here); the slow run takes SLOW_PROGRAMS
SLOW_PROGRAMS = 200  # `make test-slow` (about 5 minutes here); `python -m acrobat.fuzz --minutes N`


def _campaign_finds_nothing(programs: int) -> None:
    report = campaign.run_campaign(seed=20261130, programs=programs)
    assert not report.failures, "\n".join(str(f) for f, _ in report.failures)
    assert report.programs + report.slow == programs and report.slow <= 2
    assert report.runs >= 40 * report.programs  # 4 policies x 10 option sets, at least
    assert "fiber" in report.features and "mix:parallel_fiber_nonfiber" in report.features


def test_ci_budget_campaign_finds_nothing():
    """Generated programs, each under every policy and option set (the first CI_PROGRAMS
    of the fixed seed; the slow run takes the first SLOW_PROGRAMS)."""
    _campaign_finds_nothing(CI_PROGRAMS)


@pytest.mark.slow
def test_long_campaign_finds_nothing():
    _campaign_finds_nothing(SLOW_PROGRAMS)


def test_generated_twin_kernels_equal_the_reference():
    """Generated programs that call a helper with two weights (``weight:twins``): their
    clones' kernels become twin groups (acrobat/codegen/twins.py), and every policy, option
    set and backend still equals the reference. The first 4 such programs of seeds 0..."""
    import acrobat
    from acrobat.runtime.run import prepare

    found = 0
    for seed in range(600):
        try:
            drawn = campaign.draw_case(ChoiceSource(seed=seed))
            module = acrobat.parse(drawn.source)
            prog = acrobat.compile(module, acrobat.init_params(module, 0))
        except acrobat.AcrobatError:
            continue  # rejected programs are the campaign's business
        if not prepare(prog).executor.groups:
            continue
        result = check_program(drawn.source, drawn.instances)
        assert not result.failures, f"seed {seed}: " + "\n".join(map(str, result.failures))
        found += 1
        if found == 4:
            break
    assert found == 4, "the generator no longer makes twin kernels often enough"


class DataChoices(ChoiceSource):
    """Choices drawn from Hypothesis, so Hypothesis shrinks failing programs itself."""

    def __init__(self, data):
        super().__init__(prefix=[])
        self.data = data

    def _draw(self, n: int) -> int:
        if n <= 1:
            return 0
        v = self.data.draw(st.integers(0, n - 1))
        self.choices.append(v)
        return v


def _check_drawn(data) -> None:
    drawn = campaign.draw_case(DataChoices(data))
    result = check_program(drawn.source, drawn.instances)
    assert result.ok, "\n".join(map(str, result.failures)) + "\n" + drawn.source


_QUIET = {"deadline": None, "derandomize": True, "suppress_health_check": list(HealthCheck)}


@settings(max_examples=8, **_QUIET)
@given(st.data())
def test_hypothesis_driven_programs_pass_the_differential_check(data):
    _check_drawn(data)


# Each program is checked under every option set (the defaults and each optimization off:
# 15 with fused_elementwise), every policy and both strategies: 40 programs took just over
# the suite's 600 s limit in a fresh-clone CI run on this machine, so this test has its own.
@pytest.mark.slow
@pytest.mark.timeout(1500)
@settings(max_examples=40, **_QUIET)
@given(st.data())
def test_more_hypothesis_driven_programs_pass_the_differential_check(data):
    _check_drawn(data)


def test_shrink_finds_a_minimal_choice_sequence():
    """Fails when the sum of the choices is at least 10: the minimum is one choice, 10."""
    big = ChoiceSource(seed=3)
    for _ in range(40):
        big.integer(0, 20)
    assert sum(big.choices) >= 10
    assert shrink(big.choices, lambda c: sum(c) >= 10) == [10]


def test_replayed_prefix_reads_zeros_past_its_end():
    src = ChoiceSource(prefix=[2])
    assert (src.integer(0, 5), src.integer(3, 9), src.choice("abc")) == (2, 3, "a")
    assert src.choices == [2, 0, 0]


def test_cli_saves_a_minimized_failure_and_exits_1(tmp_path, monkeypatch, capsys):
    """A stand-in contract breach (any program that calls tanh) is shrunk, saved, and the
    saved case still shows it; the run exits 1 and its last line is the summary."""
    real = campaign.check_program

    def breach(source, instances, **kw):
        result = real(source, instances, **kw)
        if "tanh(" in source:
            result.failures.append(Failure("mismatch", "stand-in", "the program calls tanh"))
        return result

    monkeypatch.setattr(campaign, "check_program", breach)
    args = ["--programs", "3", "--seed", "5", "--shrink-budget", "25", "--quiet"]
    code = fuzz_main([*args, "--out", str(tmp_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert out[-1].startswith("fuzz: ") and "failures" in out[-1]
    saved = sorted(tmp_path.glob("*.json"))
    assert saved
    for path in saved:
        case = load(path)
        assert "tanh(" in case.source
        assert json.loads(path.read_text())["note"].startswith("mismatch")
        # minimized: no bigger than any failing program the campaign met
        assert len(case.source) < 4000


def test_cli_clean_run_exits_0(tmp_path, capsys):
    code = fuzz_main(["--programs", "3", "--seed", "1", "--out", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "programs/s" in out.splitlines()[-1]
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("minutes", [0.0])
def test_cli_minutes_bound_stops(minutes, tmp_path, capsys):
    assert fuzz_main(["--minutes", str(minutes), "--out", str(tmp_path), "--quiet"]) == 0
    assert "0 programs" in capsys.readouterr().out.splitlines()[-1]


def test_source_reduction_keeps_only_what_the_failure_needs():
    """A stand-in failure (the program parses and applies sigmoid to a weight) reduces a
    generated program to a few lines that still parse and still show it."""
    import acrobat
    from acrobat.errors import AcrobatError
    from acrobat.fuzz.reduce import reduce_source

    source = "\n".join(
        [
            'H = Size("H", 3)',
            "W: Param[H]",
            "U: Param[H, H]",
            "def helper(x: Tensor[H]) -> Tensor[H]:",
            "    y = tanh(dense(x, U))",
            "    return y * 2.0",
            "def main(x: Tensor[H], n: int) -> Tensor[H]:",
            "    a = helper(x)",
            "    k = n + 1",
            "    b = tanh(a) + sigmoid(W) * relu(x)",
            "    return b - a",
        ]
    )

    def fails(src: str) -> bool:
        try:
            acrobat.parse(src)
        except AcrobatError:
            return False
        return "sigmoid(W)" in src

    small = reduce_source(source, fails)
    assert fails(small)
    assert "helper" not in small and "U:" not in small and "k =" not in small
    assert len([line for line in small.splitlines() if line.strip()]) <= 5


@pytest.mark.parametrize("deadline", [1e-4, 1e-3, 4e-3, 2e-2])
def test_a_case_past_its_deadline_is_slow_not_a_failure(monkeypatch, deadline):
    """The deadline interrupts a check anywhere (the parser's C code included); neither the
    checker's own ``except Exception`` nor CPython's wrapping may turn that into an error
    of the program."""
    monkeypatch.setattr(campaign, "CASE_SECONDS", deadline)
    report = campaign.run_campaign(seed=3, programs=6)
    assert not report.failures, report.failures
    assert report.programs + report.slow == 6 and len(report.slow_seeds) == report.slow
