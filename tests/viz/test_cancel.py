"""Cancel puts the sidebar back to what the views show, at once, and says "cancelling…"."""

from __future__ import annotations

import time

from acrobat.viz.app_state import ExplorerState


def _until(condition, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_cancel_mid_run_leaves_the_sidebar_equal_to_the_views():
    state = ExplorerState(
        model="treelstm", size="small", batch_size=16, repeats=5, auto_run=True, background=True
    )
    assert state.wait(300) and state.trace_a is not None, state.run_error or state.error
    assert "seed 0" in state.origin
    state.seed = 1  # live: a run of seed 1 starts on the worker
    assert _until(lambda: state.busy)
    state.cancel()
    assert state.progress_text == "cancelling…"
    assert f"seed {state.seed}," in state.origin  # at once, not when the run stops
    assert state.wait(300)
    assert f"seed {state.seed}," in state.origin and state.progress_text == ""
    state.close()
