"""The key list at 1 280 px, a laptop's width: every column on screen, no sideways scroll, with
keys as an owner has them (a label, a holder, a narrowed scope, an expiry, a last use)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.actors import SCAFFOLDING
from tests.browser.conftest import log_in
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import ApiKey

pytestmark = pytest.mark.browser


def test_the_key_list_fits_a_1280_px_screen(
    page: Any, person: Callable[..., User], screenshots: Path
):
    root = person("root", staff=True)
    User.objects.filter(pk=root.pk).update(is_superuser=True)
    contour = create_contour(
        "shop-with-a-long-name",
        mode="sandbox",
        name="Магазин",
        toolsets=["read", "write", "refund"],
        actor=SCAFFOLDING,
    )
    for label in ("Claude, бухгалтерия и отдел продаж", "GigaChat — счета клиентам"):
        issue_key(contour, label, actor=SCAFFOLDING)
    ApiKey.objects.update(
        user=root,
        toolsets=["read", "write"],
        tools=["create_order", "find_orders", "get_order"],
        expires_at=timezone.now() + timedelta(days=30),
        last_used_at=timezone.now(),
        last_used_channel="mcp-http",
        last_used_address="2001:db8:85a3::8a2e:370:7334",
    )
    log_in(page, "/admin/", "root")

    page.goto("/admin/tools/apikey/")
    page.screenshot(path=str(screenshots / "key-list-1280.png"), full_page=True)

    overflow = page.evaluate(
        "Math.max(document.documentElement.scrollWidth - window.innerWidth,"
        " ...[...document.querySelectorAll('.results')].map(e => e.scrollWidth - e.clientWidth))"
    )
    assert overflow <= 0, overflow
