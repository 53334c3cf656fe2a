"""ExplorerState without a browser: set parameters, assert on the IR text and the error."""

import html
import re

import pytest

import acrobat
from acrobat import models
from acrobat.trace import BatchFormed, NodeRecorded, PassApplied, ScheduleFormed, Trace
from acrobat.viz.app_state import ExplorerState
from acrobat.viz.highlight import highlight_ir
from acrobat.viz.runner import optimization_names, policy_names

BROKEN = "def main(x: Tensor[4]) -> Tensor[4]:\n    return x +\n"


@pytest.fixture
def state() -> ExplorerState:
    return ExplorerState(model="treelstm", size="small")


def test_default_model_compiles_to_ir(state):
    assert state.model in [info.name for info in models.catalog()]
    assert state.error == ""
    assert state.source == models.source("treelstm")
    assert "def @main" in state.ir_text
    assert state.sizes_used == models.sizes("treelstm", "small")


def test_size_change_reloads_and_changes_shapes(state):
    small = state.ir_text
    hidden = models.sizes("treelstm", "tiny")["H"]
    state.size = "tiny"
    assert state.ir_text != small
    assert f"Tensor[{hidden}]" in state.ir_text
    assert f"Tensor[{hidden}]" not in small
    assert state.sizes_used == models.sizes("treelstm", "tiny")


def test_model_change_reloads_source(state):
    others = [info.name for info in models.catalog() if info.name != "treelstm"]
    if not others:
        pytest.skip("the catalog has one model only")
    state.model = others[0]
    assert state.source == models.source(others[0])
    assert state.error == "" and "def @main" in state.ir_text


def test_every_catalog_model_compiles_at_every_size(state):
    for info in models.catalog():
        for size in info.sizes:
            state.param.update(model=info.name, size=size)
            assert state.error == "", f"{info.name}/{size}: {state.error}"
            assert state.source == models.source(info.name)
            assert "def @main" in state.ir_text
            assert state.compile_trace is not None and len(state.compile_trace.of(PassApplied))


def test_broken_source_sets_error_with_line_and_does_not_raise(state):
    state.source = BROKEN
    assert state.compile() is False
    assert state.ir_text == ""
    assert state.error_line == 2
    assert re.search(r":2:\d+: AcrobatSyntaxError", state.error)


def test_recovers_after_an_error(state):
    state.source = BROKEN
    state.compile()
    state.source = models.source("treelstm")
    assert state.compile() is True
    assert state.error == "" and state.error_line is None
    assert "def @main" in state.ir_text


def test_an_edited_source_keeps_its_own_sizes_whatever_the_preset(state):
    state.size = "tiny"  # the preset applies to the built-in source only
    state.source = (
        "H = Size('H', 256)\n"
        "W: Param[H, H]\n"
        "def main(x: Tensor[H]) -> Tensor[H]:\n"
        "    return tanh(matmul(W, x))\n"
    )
    assert state.compile(), state.error
    assert state.sizes_used == {"H": 256}
    assert "Tensor[256]" in state.ir_text


def test_internal_crash_is_shown_not_raised(state, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("frontend bug")

    monkeypatch.setattr("acrobat.viz.app_state.compile_isolated", crash)
    assert state.compile() is False
    assert "internal error" in state.error and "frontend bug" in state.error
    assert state.ir_text == "" and state.error_line is None


@pytest.mark.parametrize(
    "payload",
    [
        '__import__("os").system("touch {sentinel}")',
        'open("{sentinel}", "w").write("x")',
        'x = __import__("os").system("touch {sentinel}")',
        'H = Size("H", __import__("os").system("touch {sentinel}"))',
    ],
)
def test_source_is_never_executed(state, tmp_path, payload):
    sentinel = tmp_path / "SENTINEL"
    body = payload.format(sentinel=sentinel)
    state.source = f"{body}\ndef main(x: Tensor[4]) -> Tensor[4]:\n    {body}\n    return x\n"
    assert state.compile() is False
    assert state.error
    assert not sentinel.exists()


def test_highlight_keeps_every_character():
    ir = models.parse_model("treelstm", "tiny").pretty()
    page = highlight_ir(ir + '<script>alert("x")</script>')
    assert "<script>" not in page
    assert html.unescape(re.sub(r"<[^>]+>", "", page)) == ir + '<script>alert("x")</script>'
    assert '<span class="ir-global">@main</span>' in page


# --- compiling with options, running two policies, comparing, sharing traces -------------------


@pytest.fixture
def live() -> ExplorerState:
    """A store that reruns on every change, as the app's is: TreeLSTM tiny, 6 instances."""
    return ExplorerState(model="treelstm", size="tiny", batch_size=6, auto_run=True)


def _policy(trace: Trace) -> str:
    return trace.of(ScheduleFormed)[0].policy


def test_auto_run_runs_both_policies(live):
    assert live.run_error == "" and live.error == ""
    assert _policy(live.trace_a) == "acrobat" and _policy(live.trace_b) == "dynet-depth"
    assert {"compile_ms", "run_a_ms", "run_b_ms"} <= set(live.timings)
    assert len(live.trace_a.of(BatchFormed)) > 0
    assert "treelstm, tiny, 6 instances, seed 0" in live.origin
    assert [row.policy for row in live.comparison] == ["acrobat", "dynet-depth"]


def test_without_auto_run_nothing_runs_until_asked(state):
    assert state.trace_a is None and state.compile_trace is not None
    state.policy_b = "eager"
    assert state.trace_b is None
    state.batch_size = 3
    assert state.run() is True
    assert _policy(state.trace_b) == "eager"
    assert {n.instance for n in state.trace_a.of(NodeRecorded)} == {0, 1, 2}


def test_switching_policy_b_reruns_only_b(live):
    before_a, before_b = live.trace_a, live.trace_b
    live.policy_b = "eager"
    assert live.trace_a is before_a
    assert live.trace_b is not before_b and _policy(live.trace_b) == "eager"
    eager = live.trace_b.of(BatchFormed)
    assert len(eager) > len(before_b.of(BatchFormed))


def test_same_policy_on_both_sides_runs_once(live):
    live.policy_a = "dynet-depth"
    live.run()
    assert live.trace_a is live.trace_b


def test_batch_size_and_seed_rerun(live):
    live.batch_size = 2
    assert {n.instance for n in live.trace_a.of(NodeRecorded)} == {0, 1}
    first = [b.size for b in live.trace_a.of(BatchFormed)]
    live.seed = 7
    assert [b.size for b in live.trace_a.of(BatchFormed)] != first


def test_switching_an_optimization_off_recompiles(live):
    assert set(live.optimizations) == set(optimization_names())
    coarse = len(live.trace_a.of(BatchFormed))
    live.optimizations = [n for n in live.optimizations if n != "coarsening"]
    assert live.disabled == ("coarsening",)
    assert len(live.trace_a.of(BatchFormed)) > coarse  # finer grains, more batches
    assert "no coarsening" in live.origin


def test_compare_policies_and_ablation(live):
    assert live.compare_policies()
    assert [r.policy for r in live.comparison] == [
        "acrobat",
        "dynet-depth",
        "dynet-agenda",
        "eager",
    ]
    shown = (live.trace_a, live.trace_b)
    assert live.compare_options()
    labels = [r.options for r in live.comparison if r.policy == "acrobat"]
    assert labels == ["all optimizations"] + [f"no {n}" for n in optimization_names()]
    assert (live.trace_a, live.trace_b) == shown  # the ablation runs aside
    assert live.optimizations == list(optimization_names())


def test_comparison_is_per_workload(live):
    live.compare_policies()
    live.batch_size = 3
    assert [r.policy for r in live.comparison] == ["acrobat", "dynet-depth"]


def test_trace_text_reopens_with_every_view(live):
    live.policy_b = "eager"
    text = live.trace_text()
    other = ExplorerState(model="birnn", size="tiny")
    assert other.load_trace_text(text, "shared.jsonl")
    assert (other.policy_a, other.policy_b) == ("acrobat", "eager")
    assert other.trace_a.events == live.trace_a.events
    assert other.trace_b.events == live.trace_b.events
    assert other.compile_trace.events == live.compile_trace.events
    assert other.comparison == live.comparison  # the file carries the timed runs
    assert "shared.jsonl" in other.origin and other.run_error == ""


def test_loading_a_bad_file_is_reported_not_raised(live):
    shown = live.trace_a
    assert live.load_trace_text("this is not json\n", "junk.txt") is False
    assert "junk.txt:1" in live.run_error
    assert live.load_trace_text("", "empty.jsonl") is False and "no trace events" in live.run_error
    assert live.trace_a is shown


def test_a_program_that_cannot_take_the_inputs_reports_and_stays_up(live):
    live.source = "def main(x: Tensor[4]) -> Tensor[4]:\n    return tanh(x)\n"
    assert live.compile_and_run() is False
    assert live.error == "" and "tanh(%x)" in live.ir_text
    assert "could not run on treelstm's inputs" in live.run_error
    assert live.trace_a is None
    live.source = models.source("treelstm")
    assert live.compile_and_run() and live.run_error == "" and live.trace_a is not None


def test_broken_source_clears_the_runs(live):
    live.source = BROKEN
    assert live.compile_and_run() is False
    assert live.trace_a is None and live.compile_trace is None and live.error
    live.policy_b = "eager"  # settings changes while broken do not try to run
    assert live.trace_b is None and live.run_error == ""


def test_every_policy_is_offered(state):
    names = [p.name for p in acrobat.policies()]
    assert list(policy_names()) == names == ["acrobat", "dynet-depth", "dynet-agenda", "eager"]
    assert state.param.policy_a.objects == names
    assert state.param.policy_b.objects == names


def test_every_backend_and_auto_are_offered(state):
    assert state.param.backend.objects == [b.name for b in acrobat.backends()] + ["auto"]


def test_a_policy_registered_later_is_offered_and_compared():
    """The explorer derives its policies from the registry: a new one needs no viz edit."""
    from acrobat.runtime.schedule import eager_schedule, register_policy, unregister_policy

    register_policy("toy-eager")(lambda dfg, inline_depth: eager_schedule(dfg))
    try:
        state = ExplorerState(model="treelstm", size="tiny", batch_size=2)
        assert state.param.policy_b.objects[-1] == "toy-eager"
        state.policy_b = "toy-eager"
        assert state.run(), state.run_error
        assert state.compare_policies(), state.run_error
        assert [r.policy for r in state.comparison][-1] == "toy-eager"
    finally:
        unregister_policy("toy-eager")


def test_an_edit_declaring_fewer_sizes_compiles_at_its_own(state):
    state.model = "mvrnn"
    keep = sorted(models.sizes("mvrnn", state.size))[0]
    state.source = (
        f"{keep} = Size('{keep}', 3)\n"
        f"W: Param[{keep}, {keep}]\n"
        f"def main(x: Tensor[{keep}]) -> Tensor[{keep}]:\n"
        "    return tanh(matmul(W, x))\n"
    )
    assert state.compile(), state.error
    assert state.sizes_used == {keep: 3}


# --- the worker thread: progress, cancel, superseding -----------------------------------------


def test_background_store_works_on_its_thread_and_reports_progress():
    seen = []
    state = ExplorerState(
        model="treelstm", size="tiny", batch_size=4, auto_run=True, background=True
    )
    state.param.watch(lambda e: seen.append(e.new), "progress_text")
    assert state.wait(120)
    assert state.error == "" and state.run_error == ""
    assert _policy(state.trace_a) == "acrobat" and _policy(state.trace_b) == "dynet-depth"
    assert state.busy is False and state.progress_text == ""
    assert any(text.startswith("timing ") for text in seen)
    timing = state.timing
    assert set(timing.spreads) == {"acrobat", "dynet-depth"} and timing.repeats == state.repeats
    assert timing.spreads["acrobat"].n == state.repeats
    # one source of truth: the medians in ``timings`` are the measurement's
    assert state.timings["run_a_ms"] == timing.spreads["acrobat"].median
    row = next(r for r in state.comparison if r.policy == "acrobat")
    assert row.total_ms == timing.spreads["acrobat"].median and row.runs == state.repeats


def test_cancel_stops_between_runs_and_keeps_what_finished(monkeypatch):
    import time as _time

    from acrobat.viz import runner

    real = runner.run_stats

    def slow(*args):
        once = real(*args)

        def run():
            _time.sleep(0.05)
            return once()

        return run

    monkeypatch.setattr(runner, "run_stats", slow)
    state = ExplorerState(
        model="treelstm", size="tiny", batch_size=2, auto_run=False, background=True, repeats=50
    )
    assert state.wait(60)
    timing_started = []
    state.param.watch(
        lambda e: timing_started.append(1) if e.new.startswith("timing") else None,
        "progress_text",
    )
    state.request_run()
    deadline = _time.monotonic() + 60
    while not timing_started and _time.monotonic() < deadline:
        _time.sleep(0.01)
    assert timing_started, "the run never started timing"
    state.cancel()
    assert state.wait(30), "cancel did not stop the work"
    assert state.timing is None and "Cancelled" in state.notice
    assert state.trace_a is not None and state.trace_b is not None  # the traced runs finished
    state.cancel()  # idle: harmless
    assert state.busy is False


def test_a_newer_request_supersedes_the_work_in_flight():
    state = ExplorerState(
        model="treelstm", size="tiny", batch_size=4, auto_run=True, background=True
    )
    state.policy_b = "eager"
    state.policy_b = "dynet-agenda"
    assert state.wait(120)
    assert _policy(state.trace_b) == "dynet-agenda" and state.run_error == ""
    assert set(state.timing.spreads) == {"acrobat", "dynet-agenda"}


def test_expensive_default_batch_is_lowered_and_a_chosen_one_kept(monkeypatch):
    from acrobat.viz import app_state, runner

    monkeypatch.setattr(runner, "probe_ms", lambda *a: 4 * app_state.RUN_BUDGET_MS)
    state = ExplorerState(model="treelstm", size="tiny", auto_run=True)
    assert state.batch_size == app_state.DEFAULT_BATCH // 4
    assert "Batch lowered to 16" in state.notice
    assert state.timing.repeats < state.repeats  # the long runs were cut, and it says so
    assert "instead of" in state.timing.note
    chosen = ExplorerState(model="treelstm", size="tiny", auto_run=True, batch_size=64)
    assert chosen.batch_size == 64


def test_a_trace_without_settings_is_viewed_read_only(live):
    bundle_text = "".join(
        line + "\n" for line in live.trace_text().splitlines() if "SessionSettings" not in line
    )
    other = ExplorerState(model="birnn", size="tiny", auto_run=True)
    assert other.load_trace_text(bundle_text, "plain.jsonl")
    assert other.viewing == "plain.jsonl" and other.model == "birnn"
    other.policy_b = "eager"  # nothing reruns while viewing a file
    assert other.trace_b.events == live.trace_b.events
    other.close_file()
    assert other.viewing == "" and _policy(other.trace_b) == "eager"


def test_the_verdict_says_when_the_machine_was_busy():
    from acrobat.baselines.measure import spread
    from acrobat.viz.app_state import RunTiming

    apart = {"acrobat": spread([10, 11, 12, 11, 10]), "eager": spread([30, 31, 33, 30, 32])}
    assert "faster" in RunTiming(apart, 5, 1).verdict_text("acrobat", "eager")
    busy = RunTiming(apart, 5, 1, others_busy=0.7)
    assert busy.busy and "70% of the CPUs" in busy.verdict_text("acrobat", "eager")
    close = {"acrobat": spread([10, 10.1, 10.2, 10.1, 10]), "eager": spread([10.3] * 5)}
    assert "within noise" in RunTiming(close, 5, 1).verdict_text("acrobat", "eager")


def test_compare_rows_take_their_times_from_the_timed_runs(live):
    timing = live.timing
    for row in live.comparison:
        assert row.exe_ms == timing.exe_ms[row.policy] and row.host_ms == timing.host_ms[row.policy]
        assert row.total_ms == timing.spreads[row.policy].median
    ran = {p: s["strategy"] for p, s in live._results.items()}
    # a policy the auto chooser ran per instance says so (the status line shows it)
    assert {p for p, how in ran.items() if how != "batched"} == set(timing.strategies)


@pytest.mark.parametrize(
    "change",
    [
        {"model": "no-such-model"},
        {"batch_size": "many"},
        {"seed": 1.5},
        {"source": 42},
        {"disabled": "fusion"},
    ],
)
def test_a_file_with_settings_that_cannot_apply_is_viewed_read_only(live, change):
    import json

    lines = live.trace_text().splitlines()
    first = json.loads(lines[0])
    assert first["event"] == "SessionSettings"
    first.update(change)
    text = "\n".join([json.dumps(first)] + lines[1:]) + "\n"
    other = ExplorerState(model="birnn", size="tiny")
    assert other.load_trace_text(text, "edited.jsonl")
    assert other.viewing == "edited.jsonl" and other.model == "birnn"
    assert other.trace_a.events == live.trace_a.events and other.run_error == ""


def test_a_file_whose_source_no_longer_compiles_shows_the_error_and_its_runs(live):
    import json

    lines = live.trace_text().splitlines()
    first = json.loads(lines[0])
    first["source"] = BROKEN
    text = "\n".join([json.dumps(first)] + lines[1:]) + "\n"
    other = ExplorerState(model="birnn", size="tiny")
    assert other.load_trace_text(text, "old.jsonl")
    assert other.model == "treelstm" and other.source == BROKEN
    assert "line 2" in other.error or other.error_line == 2
    assert other.trace_a.events == live.trace_a.events  # the file's runs are still shown


def test_a_store_made_not_started_compiles_only_when_started():
    state = ExplorerState(model="treelstm", size="tiny", batch_size=2, auto_run=True, start=False)
    assert state.source == models.source("treelstm") and state.compile_trace is None
    state.model = "mvrnn"  # still nothing compiles before start()
    assert state.source == models.source("mvrnn") and state.compile_trace is None
    state.start()
    assert "def @main" in state.ir_text and state.trace_a is not None
    state.start()  # once only


def test_the_status_line_shows_digits_enough_for_its_verdict():
    """Spreads apart by less than the third significant digit are shown with more digits,
    so the numbers on the line support the verdict next to them (seen in CI: "acrobat
    30.6 ms (IQR 29.1-31) · dynet-depth 32.4 ms (IQR 31-33) · acrobat is 1.06x faster")."""
    from acrobat.baselines.measure import Spread
    from acrobat.viz.app_state import RunTiming
    from acrobat.viz.run_panels import StatusLine

    timing = RunTiming(
        spreads={
            "acrobat": Spread(30.6, 29.1, 30.97, 28.0, 31.5, 5),
            "dynet-depth": Spread(32.4, 31.02, 33.0, 30.9, 34.0, 5),
        },
        repeats=5,
        warmup=1,
    )
    text = StatusLine._summary("mvrnn", {}, "", timing)
    bounds = [float(x) for x in re.findall(r"IQR ([\d.]+)–([\d.]+)", text)[0]]
    bounds += [float(x) for x in re.findall(r"IQR ([\d.]+)–([\d.]+)", text)[1]]
    assert bounds[1] < bounds[2], text  # acrobat's q3 below dynet-depth's q1, as measured
    assert "faster" in text and "within noise" not in text
    # well-separated numbers keep three digits
    timing.spreads["dynet-depth"] = Spread(52.4, 51.0, 53.0, 50.9, 54.0, 5)
    assert "IQR 29.1–31," in StatusLine._summary("mvrnn", {}, "", timing)


def test_the_status_line_writes_long_times_plainly_and_one_run_without_a_spread():
    """Seen: "berxit 1.51e+04 ms (IQR 1.51e+04–1.51e+04, n=1)"."""
    from acrobat.baselines.measure import Spread
    from acrobat.viz.app_state import RunTiming
    from acrobat.viz.run_panels import StatusLine

    one = Spread(15_100.4, 15_100.4, 15_100.4, 15_100.4, 15_100.4, 1)
    timing = RunTiming(spreads={"acrobat": one}, repeats=1, warmup=0)
    text = StatusLine._summary("berxit", {}, "", timing)
    assert "acrobat 15,100 ms (one run)" in text and "e+" not in text
