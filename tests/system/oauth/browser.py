"""The person's part of an OAuth flow in a real browser: Debian's chromium under Playwright
(never a downloaded browser), async so it runs beside the MCP clients of the same test."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, LAUNCH_ARGS
from tests.system.oauth.conftest import PASSWORD


def require_chromium() -> Path:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(f"no {CHROMIUM} here (apt-get install chromium); CI runs these tests")
    return CHROMIUM


async def consent(
    authorization_url: str, person: str, *, contour: str, callback: re.Pattern[str]
) -> str:
    """Open the client's authorization URL, log in, allow `contour` (read only) and
    follow the redirect to the client's loopback callback; returns the callback's URL."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(require_chromium()), headless=True, args=LAUNCH_ARGS
        )
        try:
            page = await browser.new_page(locale="ru-RU")
            page.set_default_timeout(30_000)
            await page.goto(authorization_url)
            await page.fill("#id_username", person)
            await page.fill("#id_password", PASSWORD)
            await page.click("input[type=submit]")
            await page.wait_for_selector("#consent-form")
            assert await page.is_checked("input[name=toolsets][value=read]")
            await page.select_option("#id_contour", contour)
            # What the client asked for comes ticked (within the shop): these tests grant read.
            if await page.is_checked("input[name=toolsets][value=write]"):
                await page.uncheck("input[name=toolsets][value=write]")
            if os.environ.get("SCREENSHOT_DIR"):  # to look at the page
                target = Path(os.environ["SCREENSHOT_DIR"])
                target.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(target / "oauth-consent.png"), full_page=True)
            await page.click("button[name=allow]")
            await page.wait_for_url(callback)
            return page.url
        finally:
            await browser.close()
