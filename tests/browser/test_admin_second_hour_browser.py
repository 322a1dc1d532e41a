"""The owner's admin pages at 1400 and 420 px in a real browser: the add-contour form with its
defaults, the contour page (checklist, address, people, connection check), «Включить запись»,
the new-key form and the lists, with nothing wider than the window."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from tests.browser.conftest import RestAssistant, log_in
from tests.browser.test_second_hour_browser import shoot
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Contour

pytestmark = pytest.mark.browser


@pytest.fixture
def root(page: Any, transactional_db: None) -> Any:
    User.objects.create_superuser("root", "root@example.test", "pw-root-123")
    log_in(page, "/admin/", "root")
    return page


def test_the_owners_admin_pages_fit_both_widths(
    root: Any, person: Callable[..., User], screenshots: Path, live_server: Any
):
    page = root
    contour = create_contour(
        "shop",
        mode="sandbox",
        name="Лавка",
        toolsets=["read"],
        own_sandbox_merchant=True,
        actor=SCAFFOLDING,
    )
    assistant = RestAssistant(
        live_server.url, issue_key(contour, "Claude, бухгалтерия", actor=SCAFFOLDING)
    )
    for arguments in ({"status": ["created"]}, {"status": ["nonsense"]}):
        assistant.call("find_orders", arguments)  # journal rows and the key's last use
    person("olga", "operators")  # no email: the contour page warns
    widths: dict[str, dict[int, int]] = {}

    page.goto("/admin/tools/contour/add/")
    assert page.is_checked("input[name=allowed_currencies][value=RUB]")
    assert page.is_checked("input[name=toolsets][value=read]")
    widths["contour-add"] = shoot(page, screenshots, "contour-add")

    page.goto(f"/admin/tools/contour/{contour.pk}/change/")
    assert "olga" in page.inner_text("#unreachable-operators")
    widths["contour-change"] = shoot(page, screenshots, "contour-change")
    page.click("#check-connection")
    page.wait_for_selector("text=Подключение контура shop работает")
    widths["contour-checked"] = shoot(page, screenshots, "contour-checked")

    page.check("input[name=toolsets][value=write]")
    page.click("text=Добавить ещё потолок")
    page.select_option("select[name=ceilings-0-kind]", "per_day")
    page.fill("input[name=ceilings-0-currency]", "RUB")
    page.fill("input[name=ceilings-0-limit]", "500 000")
    page.click("input[name=_save]")
    page.wait_for_selector("#confirm-writes")
    assert "сумма за сутки: 500 000,00" in page.inner_text(".confirm-writes").replace("\u00a0", " ")
    widths["confirm-writes"] = shoot(page, screenshots, "confirm-writes")
    page.click("#confirm-writes")
    page.wait_for_selector(".messagelist")
    assert Contour.objects.get(pk=contour.pk).ceilings.count() == 1

    for name, path in (
        ("key-add", "/admin/tools/apikey/add/"),
        ("key-list", "/admin/tools/apikey/"),
        ("journal-list", "/admin/audit/journalentry/"),
        ("user-change", f"/admin/auth/user/{User.objects.get(username='root').pk}/change/"),
    ):
        page.goto(path)
        widths[name] = shoot(page, screenshots, name)
        if name.endswith("-list"):
            page.set_viewport_size({"width": 1400, "height": 900})
            inner = page.evaluate(
                "(e => e.scrollWidth - e.clientWidth)"
                "(document.querySelector('#changelist .results'))"
            )
            widths[f"{name} table"] = {1400: inner}

    assert {name: found for name, found in widths.items() if any(found.values())} == {}
