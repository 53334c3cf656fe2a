"""Screenshots of every explorer tab, as a user sees them, for the docs.

    python scripts/explorer_screenshots.py                      # treelstm and stackrnn
    python scripts/explorer_screenshots.py --models mvrnn --out /tmp/shots

Serves apps/explorer.py (this checkout) on a free localhost port, opens it in Debian's Chromium
(Playwright, ``/usr/bin/chromium``) at 1600x1000, picks each model at the given size, waits for
the timed run, and saves ``explorer_<model>_<tab>.png`` for every tab under ``--out``
(``docs/images`` by default), and ``explorer_<model>_gap.png``: the Schedule tab's "Why above
the lower bound?" panel. The server is stopped at the end whatever happens.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABS = ("Program", "Passes", "Taint", "DFG", "Schedule", "Timeline", "Compare", "Kernels")
VIEWPORT = {"width": 1600, "height": 1000}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(port: int) -> subprocess.Popen:
    panel = Path(sys.executable).with_name("panel")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [str(panel), "serve", "apps/explorer.py", "--address", "127.0.0.1", "--port"]
    command += [str(port), "--allow-websocket-origin", f"127.0.0.1:{port}"]
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/explorer"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit(f"panel serve did not answer on {url}")


def _gap_shot(page, path: Path) -> None:
    """The Schedule tab's "Why above the lower bound?" panel, asked for and scrolled to."""
    from playwright.sync_api import expect

    page.locator(".gap-button button").click()
    panel = page.locator(".gap-report")
    expect(panel).to_contain_text("for a lower bound of")
    panel.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    page.screenshot(path=str(path))
    print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["treelstm", "stackrnn"])
    parser.add_argument("--size", default="small")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import expect, sync_playwright

    port = _free_port()
    server = _serve(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
            )
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(120_000)
            expect.set_options(timeout=120_000)
            page.goto(f"http://127.0.0.1:{port}/explorer")
            status = page.locator(".run-status")
            for model in args.models:
                page.get_by_label("Model").select_option(model)
                page.get_by_label("Size").select_option(args.size)
                expect(status).to_contain_text(f"{model}, {args.size}")
                expect(status).to_contain_text("IQR")
                for tab in TABS:
                    page.locator(".bk-tab", has_text=tab).first.click()
                    page.wait_for_timeout(2500)  # let Bokeh and Graphviz draw
                    path = args.out / f"explorer_{model}_{tab.lower()}.png"
                    page.screenshot(path=str(path))
                    print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
                    if tab == "Schedule":
                        _gap_shot(page, args.out / f"explorer_{model}_gap.png")
                page.locator(".bk-tab", has_text="Program").first.click()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=15)


if __name__ == "__main__":
    main()
