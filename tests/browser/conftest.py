"""Playwright driving Debian's chromium against pytest-django's live server (never a
downloaded browser). Skipped locally without /usr/bin/chromium; in CI a missing browser fails."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User

from tests.conftest import password_of

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium(django_db_setup: None) -> Iterator[Any]:
    """One browser per module: Playwright's sync API keeps an event loop running in this
    thread while it lives, which other tests (asyncio.run, Django's async guards) must not
    see. The test database is set up before it starts, for the same reason."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(f"no {CHROMIUM} here (apt-get install chromium); CI runs these tests")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        # The ORM calls of the tests themselves are plain synchronous code all the same.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any, live_server: Any) -> Iterator[Any]:
    context = chromium.new_context(
        locale="ru-RU",
        viewport={"width": 1280, "height": 900},
        accept_downloads=True,
        base_url=live_server.url,
    )
    context.set_default_timeout(15_000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where screenshots go: $SCREENSHOT_DIR when set (to look at them), else a temp dir."""
    target = Path(os.environ.get("SCREENSHOT_DIR") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


@pytest.fixture
def person(transactional_db: None, make_user: Callable[..., User]) -> Callable[..., User]:
    """The shared cast's make_user (tests/conftest.py), on the live server's database."""
    return make_user


def log_in(page: Any, path: str, name: str) -> None:
    page.goto(f"/accounts/login/?next={path}")
    page.fill("#id_username", name)
    page.fill("#id_password", password_of(name))
    page.click("input[type=submit]")
    page.wait_for_url(f"**{path}")


class RestAssistant:
    """An assistant calling the live server's REST API with its contour key."""

    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = httpx.post(
            f"{self.base}/api/v1/call",
            json={"name": name, "arguments": arguments},
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=20,
        )
        return response.status_code, response.json()
