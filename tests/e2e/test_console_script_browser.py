"""``acrobat-explorer --port N``, the console script an installed package provides, serves the
explorer that Chromium then shows (the app lives in the package, not only in apps/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import TIMEOUT_MS, free_port, serving

pytestmark = pytest.mark.e2e

SCRIPT = Path(sys.executable).with_name("acrobat-explorer")


def test_acrobat_explorer_command_serves_the_app(page, tmp_path):
    from playwright.sync_api import expect

    if not SCRIPT.exists():
        pytest.fail(f"{SCRIPT} is missing: reinstall the package (pip install -e '.[viz]')")
    port = free_port()
    command = [str(SCRIPT), "--port", str(port), "--address", "127.0.0.1"]
    with serving(command, port, tmp_path / "acrobat-explorer.log") as served:
        with served.log_on_failure():
            page.goto(served.url)
            expect(page).to_have_title("acrobat explorer")
            ir = page.locator(".ir-view pre.acrobat-ir")
            expect(ir).to_contain_text("def @main", timeout=TIMEOUT_MS)
            expect(page.locator(".bk-tab", has_text="Timeline").first).to_be_visible()
        assert f"http://127.0.0.1:{port}/explorer" in served.log.read_text()
