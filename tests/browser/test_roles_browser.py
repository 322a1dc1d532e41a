"""Playwright: an owner of one contour sees only that contour in the admin and the dashboard,
and another owner's contour page is a 404 in the browser too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from tests.browser.conftest import log_in
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.people import grants as role_service


def test_an_owner_sees_only_their_contours(
    page: Any, person: Callable[..., User], screenshots: Path
):
    mine = create_contour("mine", mode="sandbox", name="Мой магазин", actor=SCAFFOLDING)
    theirs = create_contour("theirs", mode="sandbox", name="Чужой магазин", actor=SCAFFOLDING)
    issue_key(mine, "ключ моего", actor=SCAFFOLDING)
    issue_key(theirs, "ключ чужого", actor=SCAFFOLDING)
    oleg = person("oleg", staff=True)
    role_service.grant(oleg, "owner", mine, actor="test")

    log_in(page, "/admin/tools/contour/", "oleg")
    contours = page.inner_text("#result_list")
    page.screenshot(path=str(screenshots / "owner-contours.png"), full_page=True)
    page.goto("/admin/tools/apikey/")
    key_list = page.inner_text("#result_list")
    filters = (
        page.inner_text("#changelist-filter") if page.locator("#changelist-filter").count() else ""
    )
    foreign = page.goto(f"/admin/tools/contour/{theirs.pk}/change/")
    page.goto("/dashboard/")
    panels = page.locator("section.contour").evaluate_all(
        "nodes => nodes.map(n => n.dataset.contour)"
    )

    assert "Мой магазин" in contours and "Чужой магазин" not in contours
    assert "ключ моего" in key_list and "ключ чужого" not in key_list
    assert "theirs" not in filters
    assert foreign is not None and foreign.status == 404
    assert panels == ["mine"]
