"""The demo in a browser, end to end: Playwright drives Debian's chromium through the local
workspace's page while the real bot answers every click, modal and command.

Screenshots of each step go to test-artifacts/screenshots/ (or $QUEUEBOT_SCREENSHOTS).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from queuebot_lab.demo import Demo, reference_alert
from testkit.integration import require_binary

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCREENSHOTS = Path(
    os.environ.get("QUEUEBOT_SCREENSHOTS")
    or Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
)
TITLE = "[P2] Jobs are queueing in autoscaled machines"
WAIT_MS = 20_000
#: The demo's clock: its story is the same at any moment, and the test never depends on when.
MOMENT = datetime(2026, 11, 26, 14, 11, tzinfo=UTC)


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    running = Demo(port=0, scratch=tmp_path, environ={}, at=MOMENT)
    try:
        await running.start()
        assert await running.play_reference() == 202
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def page(demo: Demo) -> AsyncIterator[Any]:
    chromium = require_binary("chromium", "apt-get install -y chromium")
    playwright_api = pytest.importorskip("playwright.async_api")
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium)
        try:
            shown = await browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            shown.on("pageerror", lambda error: errors.append(str(error)))
            await shown.goto(f"{demo.sandbox.url}/")
            yield shown
            assert errors == [], errors
        finally:
            await browser.close()


async def _shot(page: Any, name: str) -> None:
    # Playwright creates the folder.
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


async def test_the_whole_story_in_a_browser(demo: Demo, page: Any) -> None:
    channel = page.locator("main.channel")
    parent = channel.locator(".message").filter(has_text=TITLE).first
    # The reference alert with its values and buttons.
    await parent.wait_for(timeout=WAIT_MS)
    text = await parent.inner_text()
    assert "114 min" in text and "Max queue size:" in text and "pytorch-dev-infra" in text
    for label in ("Run diagnostics", "Silence…", "Open runbook", "View alert"):
        assert await parent.get_by_role("button", name=label).count() == 1, label
    await _shot(page, "01-alert")

    # Run diagnostics: the report and the chart in the thread.
    await parent.get_by_role("button", name="Run diagnostics").click()
    await parent.locator(".replies-link").click(timeout=WAIT_MS)
    thread = page.locator("#thread")
    await thread.get_by_text("Most likely:").wait_for(timeout=WAIT_MS)
    chart = thread.locator(".file img")
    await chart.wait_for(timeout=WAIT_MS)
    await page.wait_for_function(
        "() => [...document.querySelectorAll('#thread .file img')]"
        ".some(img => img.complete && img.naturalWidth > 600)",
        timeout=WAIT_MS,
    )
    await _shot(page, "02-diagnostics")

    # Silence…: the modal, a duration and a comment, submitted.
    await parent.get_by_role("button", name="Silence…").click()
    modal = page.locator(".modal")
    await modal.wait_for(timeout=WAIT_MS)
    assert "Grafana will get one silence" in await modal.inner_text()
    await modal.locator("select").first.select_option("2h")
    await modal.locator("textarea").fill("Raising the autoscaler maximum")
    await _shot(page, "03-silence-modal")
    await modal.get_by_role("button", name="Silence").click()
    await modal.wait_for(state="detached", timeout=WAIT_MS)
    await parent.get_by_text("Silenced until").wait_for(timeout=WAIT_MS)
    assert "by @alice" in await parent.inner_text()
    await thread.get_by_text("Raising the autoscaler maximum").wait_for(timeout=WAIT_MS)
    await _shot(page, "04-silenced")

    # Unsilence.
    await parent.get_by_role("button", name="Unsilence").click()
    await parent.get_by_role("button", name="Silence…").wait_for(timeout=WAIT_MS)
    await thread.get_by_text("Unsilenced").wait_for(timeout=WAIT_MS)
    await _shot(page, "05-unsilenced")

    # /queue-status answers, only to the one who asked.
    await page.locator("#command").fill("/queue-status")
    await page.locator("#command").press("Enter")
    answer = channel.locator(".message.ephemeral").filter(has_text="CI queue now")
    await answer.wait_for(timeout=WAIT_MS)
    shown = await answer.inner_text()
    assert "Only visible to you" in shown and "jobs waiting" in shown
    assert "Open incidents (1)" in shown and "Share in channel" in shown
    await _shot(page, "06-queue-status")
    await page.locator("#who").select_option("U0SECOND")
    await answer.wait_for(state="detached", timeout=WAIT_MS)
    await page.locator("#who").select_option("U0ONCALL")
    await answer.wait_for(timeout=WAIT_MS)

    # A resolved alert turns the message to resolved.
    await page.locator("#controls button", has_text="Resolve the reference alert").click()
    await parent.get_by_text("Resolved").first.wait_for(timeout=WAIT_MS)
    assert await parent.get_by_role("button", name="Silence…").count() == 0
    await _shot(page, "07-resolved")

    # Another alert: a surge on the runner type the fleet surges on.
    surge = demo.surge_type()
    await page.locator("#controls button", has_text="Fire a surge alert").click()
    await (
        channel.locator(".message")
        .filter(has_text=f"Jobs are queueing on {surge}")
        .wait_for(timeout=WAIT_MS)
    )
    await _shot(page, "08-surge")


async def test_alert_text_cannot_run_script_or_ping_in_the_page(demo: Demo, page: Any) -> None:
    """Whatever an alert says is shown as text: no element, no script, no @channel."""
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    body = json.loads(reference_alert())
    body["groupKey"] = "hostile"
    body["alerts"][0]["fingerprint"] = "hostile"
    body["alerts"][0]["labels"]["alertname"] = f"<!channel> {hostile}"
    summary = f"*bold* {hostile} <https://evil.example|x>"
    body["alerts"][0]["annotations"]["summary"] = summary
    body["commonAnnotations"] = {**body.get("commonAnnotations", {}), "summary": summary}
    assert await demo.fire(json.dumps(body).encode()) == 202
    shown = page.locator("main.channel .message").filter(has_text="onerror=")
    await shown.first.wait_for(timeout=WAIT_MS)
    text = await shown.first.inner_text()
    assert hostile in text and "<!channel>" in text
    assert "<https://evil.example|x>" in text  # the summary, in mrkdwn, as text
    assert await page.evaluate("window.pwned") is None
    assert await shown.first.locator("img[src=x], script, .mention.broadcast").count() == 0
    assert await shown.first.locator("a[href^='https://evil']").count() == 0
    await _shot(page, "09-hostile-alert")


async def test_a_rebound_name_gets_nothing_from_the_workspace(demo: Demo) -> None:
    """DNS rebinding: evil.example's name now points at 127.0.0.1, so its page is same-origin
    with the workspace to the browser; the workspace answers nothing under that name, neither
    the page, nor its state, nor the demo's buttons."""
    chromium = require_binary("chromium", "apt-get install -y chromium")
    playwright_api = pytest.importorskip("playwright.async_api")
    rebound = f"http://evil.example:{demo.sandbox.port}"
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium, args=["--host-resolver-rules=MAP evil.example 127.0.0.1"]
        )
        try:
            shown = await browser.new_page()
            answer = await shown.goto(f"{rebound}/")
            assert answer is not None and answer.status == 421
            # What the rebinding page's script would do next: read the channel, fire an alert.
            statuses = await shown.evaluate(
                """async () => [
                    (await fetch("/ui/state?user=U0ONCALL")).status,
                    (await fetch("/ui/control/surge", {
                        method: "POST",
                        headers: {"Content-Type": "application/json"},
                        body: "{}",
                    })).status,
                ]"""
            )
            assert statuses == [421, 421]
        finally:
            await browser.close()
