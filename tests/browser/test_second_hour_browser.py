"""The second hour, in a real browser at 1400 and 420 px: the sandbox payer's page pays with its
button, an owner at the operators' door is told theirs, Django's own pages speak Russian, and
nothing is wider than the window."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from sandbox.models import SandboxOrder
from tests.browser.conftest import RestAssistant, log_in
from tests.conftest import order_args
from tools.contours.services import create_contour
from tools.keys.services import issue_key

pytestmark = pytest.mark.browser

WIDTHS = (1400, 420)


def overflow(page: Any) -> int:
    """How far the page is wider than the window (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def shoot(page: Any, screenshots: Path, name: str) -> dict[int, int]:
    """A full-page screenshot at each width; the overflow measured at each. SCREENSHOT_SLICES=1
    also saves the page in window-high slices, legible when a long page is looked at."""
    found = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        found[width] = overflow(page)
        page.screenshot(path=str(screenshots / f"{name}-{width}.png"), full_page=True)
        if os.environ.get("SCREENSHOT_SLICES"):
            height = page.evaluate("document.documentElement.scrollHeight")
            for index, top in enumerate(range(0, height, 900)):
                page.screenshot(
                    path=str(screenshots / f"{name}-{width}-{index}.png"),
                    full_page=True,
                    clip={"x": 0, "y": top, "width": width, "height": min(900, height - top)},
                )
    return found


def test_the_payer_pays_with_the_button_and_reads_roubles_and_status_in_russian(
    page: Any, transactional_db: None, live_server: Any, screenshots: Path
):
    contour = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    assistant = RestAssistant(live_server.url, issue_key(contour, actor=SCAFFOLDING))
    args = order_args()
    _, first = assistant.call("create_order", args)
    _, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    path = "/sandbox/invoicebox/pay/" + done["data"]["payment_url"].rsplit("/pay/", 1)[1]

    page.goto(path)
    before = page.inner_text("li").replace("\u00a0", " ")
    assert "366,00 ₽" in before and "ожидает оплаты" in before
    assert shoot(page, screenshots, "sandbox-pay") == {1400: 0, 420: 0}
    page.click("text=Оплатить")
    page.wait_for_selector("text=оплачен")

    assert page.locator("button").count() == 0
    assert SandboxOrder.objects.get(order_id=done["data"]["order_id"]).status == "completed"
    shoot(page, screenshots, "sandbox-paid")


def test_an_owner_at_the_operators_door_and_a_missing_page(
    page: Any, person: Callable[..., User], screenshots: Path
):
    create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    person("anna", "owners", staff=True)
    log_in(page, "/admin/", "anna")

    page.goto("/approvals/")
    assert "Вы — владелец контура shop" in page.inner_text("main, body")
    assert shoot(page, screenshots, "approvals-owner") == {1400: 0, 420: 0}

    page.goto("/admin/")
    assert page.locator("text=Очередь одобрения").count() == 0
    assert page.locator("text=CSV для Excel").count() == 1
    shoot(page, screenshots, "admin-index-owner")

    page.goto("/no/such/page")
    assert "Страница не найдена" in page.inner_text("h1")
    assert shoot(page, screenshots, "not-found") == {1400: 0, 420: 0}
