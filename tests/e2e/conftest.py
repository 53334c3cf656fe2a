"""Browser-test fixtures: the explorer served as `make explorer` serves it, and Chromium.

``explorer`` serves apps/explorer.py on a free localhost port (one server per test module, this
checkout's ``acrobat`` first on the path), stopped at the end whatever happens; ``page`` is a
fresh page of Debian's Chromium driven by Playwright (a launch failure fails the test: it is
never skipped). Set ACROBAT_SCREENSHOTS=/some/dir to keep screenshots the tests take.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PANEL = Path(sys.executable).with_name("panel")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000
# as `make explorer` serves: a closed page's session (and its compile) ends within about 2 s
SESSION_FLAGS = ["--check-unused-sessions", "1000", "--unused-session-lifetime", "1000"]
# Set ACROBAT_SCREENSHOTS=/some/dir to keep a screenshot of each tab the tests open.
SHOTS = os.environ.get("ACROBAT_SCREENSHOTS")


def open_tab(page, name: str) -> None:
    """Open the explorer tab called ``name``, and wait until the page shows it selected.

    A click can land beside the tab when the layout moves under it (a run that starts puts
    its progress line above the tabs, and Playwright aims at where the tab was a frame
    earlier), so the tab is clicked again until its header carries ``bk-active``.
    """
    import re

    from playwright.sync_api import expect

    tab = page.locator(".bk-tab", has_text=name).first
    selected = re.compile(r"\bbk-active\b")
    for _ in range(4):
        tab.click()
        try:
            expect(tab).to_have_class(selected, timeout=5_000)
            return
        except AssertionError:
            continue
    expect(tab).to_have_class(selected)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_serving(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the server exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    else:
        pytest.fail(f"the server did not answer {url} in time:\n{log.read_text()}")
    # That GET ran the app script: a crash in it shows in the log, not in the status code.
    if "Error running application handler" in log.read_text():
        pytest.fail(f"the explorer app failed when served:\n{log.read_text()}")


@dataclass(frozen=True)
class Served:
    """Where the app answers, the server's log (shown when a test fails) and process id."""

    url: str
    log: Path
    pid: int

    @contextmanager
    def log_on_failure(self):
        try:
            yield
        except Exception:
            print(f"--- panel serve log ---\n{self.log.read_text()[-6000:]}")
            raise


@contextmanager
def serving(command: list[str], port: int, log: Path):
    """Run ``command`` (a server of the explorer on ``port``) until the block ends; yield
    where it answers. This checkout's ``acrobat`` comes first on its path (a worktree)."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/explorer"
        _wait_until_serving(url, server, log)
        yield Served(url, log, server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    """Serve apps/explorer.py on a free localhost port; stop the server afterwards."""
    port = free_port()
    log = tmp_path_factory.mktemp("explorer") / "panel-serve.log"
    command = [str(PANEL), "serve", "apps/explorer.py", "--address", "127.0.0.1"]
    command += ["--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}"]
    command += SESSION_FLAGS
    with serving(command, port, log) as served:
        yield served


@pytest.fixture
def viewport() -> dict:
    """The size of ``page``; a test module may override this fixture."""
    return {"width": 1400, "height": 900}


@pytest.fixture
def page(chromium_path, viewport):
    """A fresh Chromium page; the browser is closed afterwards."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)  # Panel answers over a websocket: allow slow CI
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=viewport)
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()
