"""An owner changes a contour in a real browser where the second factor is required (issue 42
item 5): the save that needs a fresh factor is kept, the check page asks once, and after the
code the contour is saved as filled, every field of the form kept, nothing typed again."""

from __future__ import annotations

from base64 import b32encode
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyotp
import pytest
from django.contrib.auth.models import User
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.actors import SCAFFOLDING
from tests.browser.conftest import log_in
from tools.admin.widgets import roubles_text
from tools.contours.services import create_contour
from tools.models import ContourRole

pytestmark = pytest.mark.browser


def test_a_contour_change_with_step_up_loses_no_field(
    page: Any, person: Callable[..., User], screenshots: Path, settings: Any
):
    # given: a shop, its owner with a phone, signed in with a password only (no fresh check)
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    shop = create_contour("acme", mode="sandbox", name="Цветы", actor=SCAFFOLDING)
    before = dict(shop.approval_thresholds)
    ttl_before = shop.confirmation_ttl_seconds
    oleg = person("oleg", staff=True)
    ContourRole.objects.create(user=oleg, contour=shop, role="owner")
    device = TOTPDevice.objects.create(user=oleg, name="Телефон", confirmed=True)
    app = pyotp.TOTP(b32encode(device.bin_key).decode())
    change = f"/admin/tools/contour/{shop.pk}/change/"
    log_in(page, change, "oleg")

    # when: he renames the shop, raises the RUB threshold by 1 ₽ (a widening: it needs the
    # factor) and changes the confirmation lifetime, saves, and gives the code on the check
    raised = before["RUB"] + 100
    page.fill("#id_name", "Цветы у дома")
    page.fill("input[name=approval_thresholds_RUB]", roubles_text(raised))
    page.fill("#id_confirmation_ttl_seconds", "600")
    page.click("input[name=_save]")
    page.wait_for_selector("#held-reason")
    check = page.inner_text("main")
    page.screenshot(path=str(screenshots / "contour-step-up.png"), full_page=True)
    shop.refresh_from_db()
    unchanged = (shop.name, shop.approval_thresholds["RUB"], shop.confirmation_ttl_seconds)
    page.fill("#code", app.now())
    page.click("#verify-code")
    page.wait_for_url("**/admin/tools/contour/")

    # then: nothing saved before the code; after it, every field as he filled it
    assert unchanged == ("Цветы", before["RUB"], ttl_before)
    assert check.count("код из приложения, резервный код или ключ доступа") <= 1
    shop.refresh_from_db()
    assert shop.name == "Цветы у дома"
    assert shop.approval_thresholds["RUB"] == raised
    assert shop.confirmation_ttl_seconds == 600
