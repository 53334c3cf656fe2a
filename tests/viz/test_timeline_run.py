"""The Timeline draws one of the timed runs, the one nearest the median, and says which."""

from __future__ import annotations

from acrobat.viz.app_state import ExplorerState
from acrobat.viz.explorer import Explorer
from acrobat.viz.schedule_view import timeline_model


def test_the_timeline_draws_the_timed_run_nearest_the_median():
    state = ExplorerState(model="treelstm", size="tiny", batch_size=8, repeats=5)
    explorer = Explorer(state=state)
    assert state.run(), state.run_error
    explorer.open_tab("Timeline")
    view = explorer.timeline
    for side, policy in (("A", state.policy_a), ("B", state.policy_b)):
        timed = state.timing.timed_run(policy)
        spread = state.timing.spread(policy)
        assert timed.count == 5 and 1 <= timed.index <= 5
        assert timed.wall_ms == spread.median  # of an odd count, the median is one run
        assert f"{side} · {policy}</b>: run {timed.index} of 5" in view.caption.object
        # the drawn run is that one: its length is the run's own, inside the wall time
        drawn = timeline_model(timed.trace).total_ms
        assert 0 < drawn <= timed.wall_ms
    figures = view.figure.children[:-1]
    assert len(figures) == 2
