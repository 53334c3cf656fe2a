"""One record of the timed runs: the status line, Compare, Ablate and the Timeline show the same
times of a configuration, and a saved session carries them (its verdict survives a reload)."""

from __future__ import annotations

import json

import pytest

from acrobat.baselines.measure import spread
from acrobat.trace import ConfigurationTimed
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.compare_view import ALL_ON, compare_row, compare_table_html
from acrobat.viz.explorer import Explorer
from acrobat.viz.timing_record import TimingRecord, entry_row


def timed(policy: str, walls, options: str = ALL_ON, measurement: int = 1):
    return ConfigurationTimed(policy, options, tuple(walls), measurement=measurement)


def test_a_configuration_timed_again_replaces_its_entry_and_moves_last():
    record = TimingRecord().updated("w", [timed("a", [1, 2, 3]), timed("b", [4, 5, 6])])
    record = record.updated("w", [timed("a", [7, 8, 9], measurement=2)])
    assert [(e.policy, e.wall_ms) for e in record.entries] == [("b", (4, 5, 6)), ("a", (7, 8, 9))]
    assert [r.total_ms for r in record.rows()] == [5, 8]
    assert record.updated("other", [timed("c", [1])]).rows()[0].policy == "c"
    assert len(record.updated("other", [timed("c", [1])]).entries) == 1


def test_the_pair_shown_reads_the_record_and_says_when_timed_apart():
    record = TimingRecord().updated("w", [timed("a", [10, 11, 12]), timed("b", [30, 31, 33])])
    timing = record.timing(("a", "b"), ALL_ON)
    assert timing.spreads == {"a": spread([10, 11, 12]), "b": spread([30, 31, 33])}
    assert "a is 2.82x faster than b" in timing.verdict_text("a", "b")
    assert record.timing(("a", "b"), "no fusion") is None  # not timed at these options
    apart = record.updated("w", [timed("a", [10, 11, 12], measurement=2)])
    assert "separate measurements" in apart.timing(("a", "b"), ALL_ON).verdict_text("a", "b")


@pytest.fixture(scope="module")
def ablated():
    state = ExplorerState(model="treelstm", size="tiny", batch_size=4, repeats=3)
    explorer = Explorer(state=state)
    assert state.run(), state.run_error
    assert state.compare_options(), state.run_error
    return explorer


def test_status_line_compare_ablate_and_timeline_show_one_record(ablated):
    state = ablated.state
    rows = {(r.policy, r.options): r for r in state.comparison}
    assert rows == {(e.policy, e.options): entry_row(e) for e in state.record.entries}
    for policy in (state.policy_a, state.policy_b):
        # the ablation timed the pair shown again: the status line shows its numbers
        row, s = rows[(policy, ALL_ON)], state.timing.spread(policy)
        assert (row.total_ms, row.total_q1_ms, row.total_q3_ms, row.runs) == (
            s.median,
            s.q1,
            s.q3,
            s.n,
        )
        assert state.record.get(policy, ALL_ON).measurement == 2
        assert state.timings[f"run_{'a' if policy == state.policy_a else 'b'}_ms"] == s.median
    assert not state.timing.separately
    # counts from the timed runs' statistics: the traced runs' counts
    for side, policy in (("a", state.policy_a), ("b", state.policy_b)):
        traced = compare_row(getattr(state, f"trace_{side}"))
        row = rows[(policy, ALL_ON)]
        assert (row.launches, row.nodes, row.lower_bound) == (
            traced.launches,
            traced.nodes,
            traced.lower_bound,
        )
        assert row.launches > 0 and row.mean_batch == traced.mean_batch
    ablated.open_tab("Timeline")
    timed_a = state.timing.timed_run(state.policy_a)
    assert timed_a is state.record.runs[(state.policy_a, ALL_ON)]
    assert f"run {timed_a.index} of {timed_a.count}" in ablated.timeline.caption.object


def test_a_saved_session_reopens_with_its_timed_runs_and_verdict(ablated):
    saved = ablated.state
    other = ExplorerState(model="birnn", size="tiny")
    explorer = Explorer(state=other)
    assert other.load_trace_text(saved.trace_text(), "shared.jsonl"), other.run_error
    assert other.record.entries == saved.record.entries
    assert other.comparison == saved.comparison
    assert other.timing.spreads == saved.timing.spreads
    pair = (saved.policy_a, saved.policy_b)
    assert other.timing.verdict_text(*pair) == saved.timing.verdict_text(*pair)
    assert "(1 run)" not in compare_table_html(other.comparison)
    assert "acrobat.bench run" in other.reproduce
    explorer.open_tab("Timeline")  # the file has the times, not the timed runs: it says so
    s = other.timing.spread(saved.policy_a)
    assert f"timed: median {s.median:.3g} ms" in explorer.timeline.caption.object


def _with_timed(state: ExplorerState, **change) -> str:
    events = [json.loads(line) for line in state.trace_text().splitlines()]
    entry = next(e for e in events if e["event"] == "ConfigurationTimed")
    entry.update(change)
    return "".join(json.dumps(e) + "\n" for e in events)


@pytest.mark.parametrize(
    "change, says",
    [
        ({"wall_ms": []}, "1 to 10000 times"),
        ({"wall_ms": ["<b>1</b>"]}, "wall_ms should be tuple[float, ...]"),
        ({"wall_ms": [float("nan")]}, "finite and not negative"),
        ({"host_ms": -1.0}, "finite and not negative"),
        ({"launches": "many"}, "launches should be int"),
        ({"others_busy": 2.0}, "others_busy 0..1"),
        ({"policy": {"x": 1}}, "policy should be str"),
    ],
)
def test_a_file_with_bad_timed_runs_is_refused_naming_the_field(ablated, change, says):
    state = ExplorerState(model="treelstm", size="tiny", batch_size=3)
    assert not state.load_trace_text(_with_timed(ablated.state, **change), "bad.jsonl")
    assert "bad.jsonl:2: not a trace event" in state.run_error and says in state.run_error
    assert state.record.entries == ()
