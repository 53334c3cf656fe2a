"""The Timeline tab and the Perfetto download, in the served app driven by Debian's Chromium.

The server is started as in test_explorer_browser.py (`panel serve apps/explorer.py` on a free
localhost port), with this checkout first on ``PYTHONPATH`` so the app serves the code under
test even where another checkout of acrobat is installed.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.chrome_format import check_chrome_trace
from tests.e2e.test_explorer_browser import (
    CHROMIUM_ARGS,
    PANEL,
    ROOT,
    TIMEOUT_MS,
    Served,
    _free_port,
    _wait_until_serving,
)

pytestmark = pytest.mark.e2e
MEASURE_TOOL = "Measure a span (box select)"  # acrobat.viz.schedule_view.MEASURE_TOOL


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    """Serve apps/explorer.py on a free localhost port; stop the server afterwards."""
    port = _free_port()
    log = tmp_path_factory.mktemp("timeline") / "panel-serve.log"
    command = [str(PANEL), "serve", "apps/explorer.py", "--address", "127.0.0.1"]
    command += ["--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}"]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/explorer"
        _wait_until_serving(url, server, log)
        yield Served(url, log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


@pytest.fixture
def page(chromium_path):
    """A fresh Chromium page at 1600x1000; the browser is closed afterwards."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def test_perfetto_download_and_timeline_measurement(explorer, page, tmp_path):
    from playwright.sync_api import expect

    with explorer.log_on_failure():
        page.goto(explorer.url)
        status = page.locator(".run-status")
        expect(status).to_contain_text("64 instances", timeout=TIMEOUT_MS)
        page.get_by_label("Size").select_option("tiny")
        expect(status).to_contain_text("treelstm, tiny")

        # the Perfetto download: the session (A, B and the passes) in the Chrome format
        with page.expect_download(timeout=TIMEOUT_MS) as download:
            page.locator(".trace-download-chrome").click()
        assert download.value.suggested_filename.endswith(".perfetto.json")
        saved = tmp_path / "session.json"
        download.value.save_as(saved)
        doc = json.loads(saved.read_text())
        assert check_chrome_trace(doc) == []
        processes = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
        assert {"run 1: acrobat", "run 2: dynet-depth"} <= processes
        batches = [e for e in doc["traceEvents"] if e.get("cat") == "batch"]
        assert batches and all(e["args"]["batch size"] >= 1 for e in batches)

        # the timeline: two figures, and a box selection measured in the Div under them
        page.locator(".bk-tab", has_text="Timeline").first.click()
        measure = page.get_by_text("Measure: pick the box-select tool")
        expect(measure).to_be_visible()
        tools = page.locator(f'[title="{MEASURE_TOOL}"]')
        expect(tools).to_have_count(2)
        tool = tools.first
        canvas = page.locator(".timeline canvas").first
        expect(canvas).to_be_visible()
        result = page.get_by_text("Selected span")
        for _attempt in range(10):  # Bokeh wires its toolbar and canvas up after they show
            if "bk-active" not in (tool.get_attribute("class") or ""):
                tool.click()
                page.wait_for_timeout(300)
                continue
            box = canvas.bounding_box()
            y = box["y"] + box["height"] * 0.5
            page.mouse.move(box["x"] + box["width"] * 0.2, y)
            page.mouse.down()
            page.mouse.move(box["x"] + box["width"] * 0.9, y, steps=8)
            page.mouse.up()
            if result.count():
                break
            page.wait_for_timeout(500)
        expect(result).to_be_visible()
        div = result.locator("xpath=..")  # the Div under the plots
        expect(div).to_contain_text("ms long")
        expect(div).to_contain_text("A · acrobat: kernel time")
        expect(div).to_contain_text("B · dynet-depth: kernel time")
