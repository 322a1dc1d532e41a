"""The owners' admin and dashboard as a newcomer sees them at 1400 px: Russian headers and
filters, lists that fit, money in roubles with ₽, a way to the dashboard, charts that name
their time zone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from tests.browser.conftest import RestAssistant, log_in
from tests.conftest import order_args
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Ceiling, CeilingKind

pytestmark = pytest.mark.browser


@pytest.fixture
def wide(page: Any) -> Any:
    page.set_viewport_size({"width": 1400, "height": 900})
    return page


@pytest.fixture
def shop(transactional_db: None, live_server: Any) -> RestAssistant:
    contour = create_contour(
        "shop", mode="sandbox", name="Магазин", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.save()
    Ceiling.objects.create(
        contour=contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=100_000_00
    )
    assistant = RestAssistant(live_server.url, issue_key(contour, "claude", actor=SCAFFOLDING))
    assistant.call("create_order", order_args())  # a journal row and a waiting confirmation
    assistant.call("no_such_tool", {})
    return assistant


def overflow(page: Any) -> int:
    """How far the page or the changelist's own scroller runs past the screen, in pixels."""
    return page.evaluate(
        "Math.max(document.documentElement.scrollWidth - window.innerWidth,"
        " ...[...document.querySelectorAll('.results')].map(e => e.scrollWidth - e.clientWidth))"
    )


def test_admin_lists_fit_and_speak_russian(
    wide: Any, person: Callable[..., User], shop: RestAssistant, screenshots: Path
):
    person("root", staff=True).__class__.objects.filter(username="root").update(is_superuser=True)
    log_in(wide, "/admin/", "root")

    wide.goto("/admin/audit/journalentry/")
    wide.screenshot(path=str(screenshots / "admin-journal.png"), full_page=True)
    headers = wide.locator("#result_list thead th").all_inner_texts()
    filters = wide.locator("#changelist-filter").inner_text()
    assert overflow(wide) <= 0
    assert "CONTOUR" not in " ".join(headers).upper().replace("КОНТУР", "")
    assert "contour" not in filters.lower()

    wide.goto("/admin/tools/pendingconfirmation/")
    wide.screenshot(path=str(screenshots / "admin-confirmations.png"), full_page=True)
    assert overflow(wide) <= 0
    assert "contour" not in wide.locator("#result_list thead").inner_text().lower()
    assert "contour" not in wide.locator("#changelist-filter").inner_text().lower()

    wide.goto("/admin/tools/apikey/")
    filters = wide.locator("#changelist-filter").inner_text()
    assert "действует" in filters and "отозван" in filters
    assert "Пусто" not in filters

    wide.goto("/admin/tools/contour/")
    wide.locator("#result_list a", has_text="shop").first.click()
    wide.screenshot(path=str(screenshots / "admin-contour.png"), full_page=True)
    assert wide.locator('input[name="approval_thresholds_RUB"]').input_value() == "100\u00a0000,00"
    assert "₽" in wide.locator(".money-thresholds").inner_text()
    add_row = wide.locator("#ceilings-group .add-row a")
    assert add_row.inner_text() == "Добавить ещё потолок"
    assert wide.locator("#user-tools a", has_text="Обзор").get_attribute("href") == "/dashboard/"


def test_dashboard_looks_like_the_queue_and_names_its_time_zone(
    wide: Any, person: Callable[..., User], shop: RestAssistant, screenshots: Path
):
    person("oleg", "owners")
    log_in(wide, "/dashboard/", "oleg")
    wide.screenshot(path=str(screenshots / "dashboard.png"), full_page=True)

    assert wide.locator("header.top .brand").inner_text().startswith("Шлюз Инвойсбокс")
    zone = wide.locator('section[data-contour="shop"] [data-zone]').inner_text()
    assert "Europe/Moscow, UTC+03:00" in zone
    background = wide.evaluate(
        "getComputedStyle(document.querySelector('header.top')).backgroundColor"
    )
    assert background == "rgb(35, 50, 74)"  # the queue's header colour
