"""The served explorer cannot be pinned: a page closed while its program compiles takes the
compile process with it, and the server stops within 5 s of SIGTERM even mid-compile (served
by ``panel serve`` and by the ``acrobat-explorer`` console script, which handles SIGTERM itself).

The compile runs in a child of the server's fork server (``acrobat.viz.compile_worker``), so
the processes are found in /proc as the server's grandchildren.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import free_port, serving
from tests.e2e.test_explorer_browser import _replace_source

pytestmark = pytest.mark.e2e

# 1,500 statements, under the frontend's size limits: seconds of compiling, well under the
# explorer's limit of 30 s
SLOW = (
    "def main(x: Tensor[4]) -> Tensor[4]:\n"
    + "".join(f"    x = tanh(x) * {i}.0\n" for i in range(1500))
    + "    return x\n"
)


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def _compiling(server: int) -> set[int]:
    """The server's grandchildren: compiles running in children of its fork server."""
    return {g for child in _children(server) for g in _children(child)}


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _start_slow_compile(explorer, page) -> None:
    from playwright.sync_api import expect

    page.goto(explorer.url)
    expect(page.locator(".run-status")).to_contain_text("treelstm")
    _replace_source(page, SLOW)
    page.locator(".compile-button button").click()
    assert _wait_for(lambda: _compiling(explorer.pid), 30), "no compile process started"


def test_a_closed_page_kills_its_compile_within_5_s(explorer, page):
    with explorer.log_on_failure():
        _start_slow_compile(explorer, page)
        page.close()
        closed = time.monotonic()
        assert _wait_for(lambda: not _compiling(explorer.pid), 5), _compiling(explorer.pid)
        print(f"compile process gone {time.monotonic() - closed:.2f} s after the page closed")


def _gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _sigterm_mid_compile(served, page) -> float:
    """SIGTERM ``served`` while it compiles; seconds until it and its compile are gone."""
    _start_slow_compile(served, page)
    compiling = _compiling(served.pid)
    os.kill(served.pid, signal.SIGTERM)
    sent = time.monotonic()
    assert _wait_for(lambda: _gone(served.pid), 5), "the server still runs 5 s after SIGTERM"
    stopped = time.monotonic() - sent
    assert _wait_for(lambda: all(_gone(p) for p in compiling), 5 - stopped), compiling
    print(
        f"server stopped {stopped:.2f} s after SIGTERM, its compile {time.monotonic() - sent:.2f} s"
    )
    return stopped


def test_the_server_stops_within_5_s_of_sigterm_mid_compile(explorer, page):
    with explorer.log_on_failure():
        _sigterm_mid_compile(explorer, page)


def test_acrobat_explorer_stops_within_5_s_of_sigterm_mid_compile(page, tmp_path):
    script = Path(sys.executable).with_name("acrobat-explorer")
    port = free_port()
    command = [str(script), "--port", str(port), "--address", "127.0.0.1"]
    log = tmp_path / "acrobat-explorer.log"
    with serving(command, port, log) as served, served.log_on_failure():
        _sigterm_mid_compile(served, page)
        # it stopped on its own terms (its handler), not killed by the signal
        assert "acrobat explorer stopped" in log.read_text()
