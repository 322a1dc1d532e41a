"""The owners' dashboard in a real browser: an owner logs in and reads the journal's numbers
drawn as server-side SVG; an operator is turned away."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from tests.browser.conftest import RestAssistant, log_in
from tests.tools.ops.conftest import distinctive_order, valid_inn
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Ceiling, CeilingKind

pytestmark = pytest.mark.browser


@pytest.fixture
def shop(transactional_db: None, live_server: Any) -> RestAssistant:
    contour = create_contour(
        "shop", mode="sandbox", name="Магазин у дома", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    Ceiling.objects.create(
        contour=contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=100_000_00
    )
    Ceiling.objects.create(contour=contour, kind=CeilingKind.PER_HOUR, limit=20)
    return RestAssistant(live_server.url, issue_key(contour, "claude", actor=SCAFFOLDING))


def test_owner_reads_calls_refusals_ceilings_and_pending_work(
    page: Any, person: Callable[..., User], shop: RestAssistant, screenshots: Path
):
    args = distinctive_order(valid_inn(), "ООО «Витрина»")
    token = shop.call("create_order", args)[1]["confirmation"]["token"]
    assert shop.call("create_order", {**args, "confirmation_token": token})[0] == 200
    shop.call("find_orders", {})
    shop.call("create_order", distinctive_order(valid_inn(), "ООО «Очередь»"))
    shop.call("create_refund", {"order_id": "x"})  # refused: refunds are off
    shop.call("no_such_tool", {})  # refused
    person("oleg", "owners")

    log_in(page, "/dashboard/", "oleg")

    panel = page.locator('section[data-contour="shop"]')
    assert panel.locator('[data-period="24h"] [data-calls]').inner_text() == "6"
    assert panel.locator('[data-period="24h"] [data-refusals]').inner_text() == "2"
    assert panel.locator('[data-period="30d"] [data-calls]').inner_text() == "6"
    charts = panel.locator("svg.chart")
    assert charts.count() == 2
    assert charts.first.get_attribute("data-calls") == "6"
    assert charts.first.get_attribute("data-refusals") == "2"
    # The current hour is the last bar of the day chart; its tooltip carries the numbers.
    last_bar = charts.first.locator("g.bar").last
    assert last_bar.get_attribute("data-calls") == "6"
    assert "вызовов 6, отказов 2" in last_bar.locator("title").text_content()
    assert charts.first.bounding_box()["width"] > 600  # drawn, not just present
    text = panel.inner_text().replace("\u00a0", " ")
    assert "Выставлено счетов за 30 дней: 366,00 ₽" in text
    assert "366,00 ₽" in text and "100 000,00 ₽" in text and "0,4 %" in text
    assert panel.locator("[data-pending]").inner_text() == "1"
    pending = page.locator("table.pending tr")
    assert pending.count() == 2  # heading + the one open confirmation
    assert "create_order" in pending.nth(1).inner_text()
    page.screenshot(path=str(screenshots / "dashboard.png"), full_page=True)


def test_an_operator_is_turned_away(page: Any, person: Callable[..., User], transactional_db: None):
    person("olga", "operators")

    page.goto("/accounts/login/?next=/approvals/")
    page.fill("#id_username", "olga")
    page.fill("#id_password", "pw-olga-123")
    page.click("input[type=submit]")
    page.wait_for_url("**/approvals/")
    response = page.goto("/dashboard/")

    assert response.status == 403
    assert "Только для владельцев" in page.content()
