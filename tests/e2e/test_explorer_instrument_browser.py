"""The explorer as an instrument, in Chromium: honest timings, work off the event loop with
progress and Cancel, size-limited uploads, and saved sessions that restore the page.

The server and browser fixtures are in tests/e2e/conftest.py (one server for this module).
"""

from __future__ import annotations

import re
import time

import pytest

from acrobat.viz.compare_view import NOISE_FLOOR, within_noise
from tests.e2e.conftest import SHOTS, TIMEOUT_MS, open_tab

pytestmark = pytest.mark.e2e


TEXT = (
    "el => Array.from((el.shadowRoot || el).children)"
    ".filter(c => c.tagName !== 'STYLE').map(c => c.innerText).join(' ')"
)


def _status(page):
    return page.locator(".run-status")


def _text(locator) -> str:
    """What a Panel pane shows (its text sits in a shadow root)."""
    return locator.evaluate(TEXT)


def _timed(page, iqr: bool = False) -> str:
    """Wait for the status line to show a measurement, and return its text. ``iqr``: one of
    several timed rounds (a spread); else a single round counts too — on a loaded machine
    an expensive model's estimate can leave time for one round only ("(one run)")."""
    from playwright.sync_api import expect

    done = "IQR" if iqr else re.compile(r"acrobat [\d.,]+ ms \((IQR|one run)")
    expect(_status(page)).to_contain_text(done, timeout=TIMEOUT_MS)
    return _text(_status(page))


def _spreads(text: str) -> dict[str, tuple[float, float, float]]:
    """Each policy's (median, IQR low, IQR high) as the status line shows them."""
    pat = r"(acrobat|dynet-depth|dynet-agenda|eager) ([\d.,]+) ms \(IQR ([\d.,]+)–([\d.,]+)"

    def number(shown: str) -> float:  # "1,230" past a thousand
        return float(shown.replace(",", ""))

    return {m[0]: tuple(map(number, m[1:])) for m in re.findall(pat, text)}


def test_two_policies_on_the_same_schedule_get_a_verdict_their_spreads_support(explorer, page):
    """MV-RNN small, 64 instances: acrobat and dynet-depth launch the same 12 batches; the page
    shows both medians with their spreads, and its verdict follows them: "within noise" when
    the IQRs overlap or the medians are closer than ``NOISE_FLOOR``, a winner only when they
    are apart (then in bold in Compare too).

    The two are close but not equal: dynet-depth's scheduler, Python over every node, costs
    2-3 ms more per run on this model (sched_ms 2.0 vs 0.3, measured interleaved), which a
    quiet machine can resolve; so either verdict may be right, and the test checks that the
    one shown is the one the shown numbers support."""
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Model").select_option("mvrnn")
        expect(_status(page)).to_contain_text("mvrnn, small, 64 instances")
        text = _timed(page, iqr=True)
        open_tab(page, "Schedule")
        summary = page.locator(".schedule-summary")
        expect(summary).to_contain_text("A · acrobat")
        expect(summary).to_contain_text("B · dynet-depth")
        launches = [int(n) for n in _batches(_text(summary))]
        assert launches[0] == launches[1], f"not the same schedule: {_text(summary)}"
        spreads = _spreads(text)
        assert set(spreads) == {"acrobat", "dynet-depth"}, text
        (ma, la, ha), (mb, lb, hb) = spreads["acrobat"], spreads["dynet-depth"]
        assert la <= ma <= ha and lb <= mb <= hb, text
        # the page's rule (acrobat.viz.compare_view.within_noise): a winner only when the IQRs
        # are apart and the medians differ by more than NOISE_FLOOR; the page rounds to 0.01 ms,
        # so a case on the rule's edge (within that rounding) may go either way
        apart = not within_noise((ma, la, ha), (mb, lb, hb))
        edge = (
            abs(abs(ma - mb) - NOISE_FLOOR * min(ma, mb)) < 0.02
            or min(abs(ha - lb), abs(hb - la)) < 0.02
        )
        if "no winner called: other processes used" in text:
            # a busy machine (other processes past BUSY_SHARE of the CPUs, e.g. a test run
            # beside this one): the page calls no winner whatever the spreads say
            assert "faster" not in text and "within noise" not in text, text
            apart = False
        elif edge:
            assert ("within noise" in text) != ("faster than" in text), text
            apart = "faster than" in text
        elif apart:
            assert "within noise" not in text and "faster than" in text, text
            fast, slow = ("acrobat", "dynet-depth") if ma < mb else ("dynet-depth", "acrobat")
            assert f"{fast} is" in text and f"faster than {slow}" in text, text
            assert max(ma, mb) / min(ma, mb) < 1.5, f"not close for one schedule: {text}"
        else:
            assert "within noise" in text and "faster" not in text, text
        open_tab(page, "Compare")
        table = page.locator(".compare-table").first
        expect(table).to_contain_text("dynet-depth")
        if not apart:
            assert "<b>" not in table.inner_html()  # no winner in bold either
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/explorer_compare_within_noise.png")


def _batches(summary: str) -> list[str]:
    import re

    return re.findall(r": (\d+) batches", summary)


def test_a_long_run_shows_progress_is_cancelled_and_other_pages_load(explorer, page):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Model").select_option("berxit")
        expect(_status(page)).to_contain_text("berxit, small")
        # the default batch was lowered for this expensive model, and the page says so
        expect(page.locator(".run-notice")).to_contain_text("Batch lowered")
        _timed(page)
        handle = page.locator(".batch-size .noUi-handle")
        handle.focus()
        handle.press("End")  # the largest batch the slider offers
        working = page.locator(".run-working")
        expect(working).to_be_visible()
        expect(page.locator(".run-progress-text")).to_contain_text(
            re.compile("estimating|running|timing")
        )

        # meanwhile a second page loads and compiles its own program
        other = page.context.browser.new_page()
        started = time.monotonic()
        other.goto(explorer.url)
        expect(other.locator(".ir-view pre.acrobat-ir")).to_contain_text("def @main")
        loaded = time.monotonic() - started
        print(f"\nsecond page answered in {loaded:.1f} s while berxit ran")
        other.close()

        expect(working).to_be_visible()  # still going
        page.locator(".cancel-button button").click()
        expect(page.locator(".run-notice")).to_contain_text("Cancelled")
        expect(working).to_be_hidden(timeout=2 * TIMEOUT_MS)
        # and the page still works: a policy change runs
        page.get_by_label("Batch size")  # present
        page.get_by_label("Policy B").select_option("eager")
        open_tab(page, "Schedule")
        expect(page.locator(".schedule-summary")).to_contain_text(
            "B · eager", timeout=2 * TIMEOUT_MS
        )


def test_a_50_mb_upload_is_refused_and_the_session_keeps_working(explorer, page, tmp_path):
    from playwright.sync_api import expect

    big = tmp_path / "huge.jsonl"
    with big.open("wb") as f:
        f.write(b'{"event": "PhaseBoundary", "phase": 0}\n' * (50 * 2**20 // 39 + 1))
    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.locator(".trace-upload input[type=file]").set_input_files(str(big))
        expect(page.locator(".trace-upload")).to_contain_text("File is too large")
        expect(page.locator(".trace-upload")).to_contain_text("Maximum file size is 32 MB")
        page.get_by_label("Policy B").select_option("eager")  # the session still answers
        open_tab(page, "Schedule")
        expect(page.locator(".schedule-summary")).to_contain_text("B · eager")


def test_a_loaded_trace_switches_the_sidebar_and_the_source(explorer, page, tmp_path):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Model").select_option("mvrnn")
        page.get_by_label("Size").select_option("tiny")
        expect(_status(page)).to_contain_text("mvrnn, tiny")
        timed = _spreads(_timed(page, iqr=True))
        with page.expect_download(timeout=TIMEOUT_MS) as download:
            page.locator(".trace-download").click()
        saved = tmp_path / "mvrnn.jsonl"
        download.value.save_as(saved)

        page.goto(explorer.url)  # a new session: TreeLSTM small
        expect(_status(page)).to_contain_text("treelstm, small")
        page.locator(".trace-upload input[type=file]").set_input_files(str(saved))
        expect(_status(page)).to_contain_text("mvrnn.jsonl")
        expect(page.get_by_label("Model")).to_have_value("mvrnn")
        expect(page.get_by_label("Size")).to_have_value("tiny")
        expect(page.locator(".source-editor")).to_contain_text("MV-RNN")
        expect(page.locator(".ir-header")).to_contain_text("sizes")
        # the file carries the timed runs: the same medians and spreads, not one run's time
        assert _spreads(_timed(page, iqr=True)) == timed
        open_tab(page, "Compare")
        expect(page.locator(".compare-table").first).to_contain_text("dynet-depth")
        assert "(1 run)" not in _text(page.locator(".compare-table").first)


def test_the_ablation_and_the_status_line_show_one_record(explorer, page):
    """After *Ablate optimizations*, the status line's medians are the ablation's rows' (one
    record of the timed runs: the ablation times the pair shown too)."""
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        _timed(page)
        page.get_by_label("Size").select_option("tiny")
        expect(_status(page)).to_contain_text("treelstm, tiny")
        _timed(page)
        open_tab(page, "Compare")
        page.locator(".compare-options button").click()
        table = page.locator(".compare-table").first
        expect(table).to_contain_text("no fusion", timeout=TIMEOUT_MS)
        expect(page.locator(".run-working")).to_be_hidden(timeout=TIMEOUT_MS)
        rows = page.locator(".compare-table tr")
        shown = _spreads(_timed(page, iqr=True))
        for policy, (median, low, high) in shown.items():
            row = rows.filter(has_text=f"{policy}").filter(has_text="all optimizations")
            cells = row.first.locator("td").all_inner_texts()
            iqr = [float(x) for x in cells[3].split("–")]
            close = pytest.approx([median, low, high], rel=0.01, abs=0.01)
            assert [float(cells[2]), *iqr] == close, (cells, shown)
