"""Passkeys in a real browser: Debian's chromium with a CDP virtual authenticator. An operator
is sent to enrollment, is refused a first device by password alone, confirms the app an
administrator prepared (manage.py add_totp), adds a passkey right after, approves with it;
without the authenticator the next approval is refused and the item stays pending."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.browser.conftest import RestAssistant, log_in
from tests.conftest import Clock, order_args
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import ConfirmationStatus, PendingConfirmation

pytestmark = pytest.mark.browser
# GATEWAY_STEP_UP_SECONDS here: long enough to click under load; the test moves the clock past it.
WINDOW = 60


@pytest.fixture
def passkeys(settings: Any, live_server: Any) -> None:
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True
    settings.GATEWAY_STEP_UP_SECONDS = WINDOW
    settings.OTP_WEBAUTHN_RP_ID = "localhost"
    settings.OTP_WEBAUTHN_ALLOWED_ORIGINS = [live_server.url]
    # Without an authenticator the browser's prompt gives up after this long, not 5 minutes.
    settings.OTP_WEBAUTHN_TIMEOUT_SECONDS = 3


@pytest.fixture
def guarded_assistant(transactional_db: None, live_server: Any) -> RestAssistant:
    contour = create_contour(
        "guarded", mode="sandbox", name="Бухгалтерия", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.save()
    return RestAssistant(live_server.url, issue_key(contour, "claude", actor=SCAFFOLDING))


def prepare(assistant: RestAssistant, number: int) -> str:
    status, body = assistant.call("create_order", order_args(description=f"Счёт {number}"))
    assert (status, body["status"]) == (200, "confirmation_required"), body
    return str(body["confirmation"]["id"])


def add_authenticator(page: Any) -> tuple[Any, str]:
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp, added["authenticatorId"]


def prepared_app(username: str) -> pyotp.TOTP:
    """What an administrator hands over in person: the app of manage.py add_totp."""
    out = io.StringIO()
    call_command("add_totp", username, stdout=out, stderr=io.StringIO())
    return pyotp.TOTP(parse_qs(urlsplit(out.getvalue().strip()).query)["secret"][0])


def confirm_prepared(page: Any, app: pyotp.TOTP) -> None:
    page.fill("#prepared-code", app.now())
    page.click("#confirm-prepared")
    page.wait_for_selector(".msg.success")


def verify_with_passkey_and_approve(page: Any, cid: str) -> None:
    page.goto(f"/approvals/{cid}/")
    page.click("#verify-passkey")
    page.click("#passkey-verification-button")
    page.wait_for_url(lambda url: urlsplit(url).path == f"/approvals/{cid}/")
    page.click("#approve")
    page.wait_for_selector(".msg.success")


def test_the_passkey_button_is_offered_only_once_its_translations_have_arrived(
    passkeys: None, page: Any, person: Callable[..., User], settings: Any
):
    """A slow translation catalog must not leave a button that does nothing: the library's
    handler calls gettext on the first click, so the button may only appear after it."""
    settings.GATEWAY_STEP_UP_SECONDS = 60  # the check below must outlast the held catalog
    person("olga", "operators")
    app = prepared_app("olga")
    log_in(page, "/account/second-factor/", "olga")
    confirm_prepared(page, app)  # her first device: a passkey needs a fresh check of it
    held: list[Any] = []
    page.route(re.compile(r"/webauthn/jsi18n/"), lambda route: held.append(route))

    page.goto("/account/second-factor/?next=/approvals/", wait_until="commit")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the page never asked for the translations"
    page.wait_for_timeout(700)  # ample for the module to run and offer the button, were it free to
    assert page.locator("#passkey-register-button").count() == 0

    cdp, authenticator = add_authenticator(page)
    held[0].continue_()
    page.click("#passkey-register-button")
    page.wait_for_url(lambda url: urlsplit(url).path == "/approvals/")
    assert cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]


def test_enroll_a_passkey_approve_with_it_and_without_it_be_refused(
    passkeys: None,
    page: Any,
    person: Callable[..., User],
    guarded_assistant: RestAssistant,
    clock: Clock,
):
    person("olga", "operators")
    first, second = prepare(guarded_assistant, 1), prepare(guarded_assistant, 2)
    cdp, authenticator = add_authenticator(page)
    log_in(page, "/approvals/", "olga")

    # No device yet: the decision page sends her to enrollment, saying why; the password
    # alone adds none (no passkey button), an administrator prepares her app.
    page.goto(f"/approvals/{first}/")
    page.wait_for_url("**/account/second-factor/?next=*")
    assert "Нужен второй фактор" in page.inner_text(".msg.warning")
    assert "manage.py add_totp olga" in page.inner_text("#bootstrap")
    assert page.locator("#passkey-register-button").count() == 0
    app = prepared_app("olga")
    page.reload()
    confirm_prepared(page, app)
    page.wait_for_url(lambda url: urlsplit(url).path == f"/approvals/{first}/")
    # The app's first code was a fresh check: a passkey may be added right after it.
    page.goto(f"/account/second-factor/?next=/approvals/{first}/")
    page.click("#passkey-register-button")
    page.wait_for_url(lambda url: urlsplit(url).path == f"/approvals/{first}/")
    assert cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]

    clock.advance(WINDOW + 1)  # the check made at enrollment runs out: the passkey is asked
    verify_with_passkey_and_approve(page, first)

    decided = PendingConfirmation.objects.get(pk=first)
    assert decided.status == ConfirmationStatus.APPROVED
    assert decided.factor_kind == "webauthn" and decided.factor_checked_at is not None
    entry = JournalEntry.objects.get(phase="approve", confirmation_id=first)
    assert entry.arguments["second_factor"]["kind"] == "webauthn"
    assert entry.arguments["second_factor"]["device"] == decided.factor_device != ""

    cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator})
    clock.advance(WINDOW + 1)
    page.goto(f"/approvals/{second}/")
    page.click("#verify-passkey")
    page.click("#passkey-verification-button")
    page.wait_for_selector(
        "#passkey-verification-status-message[data-status-enum]", timeout=45_000
    )  # chromium waits at least 10 s for a device
    assert "/account/second-factor/verify/" in page.url
    assert (
        page.get_attribute("#passkey-verification-status-message", "data-status-enum") != "success"
    )

    # Submitting the decision anyway (past the browser's own check of the code field).
    page.goto(f"/approvals/{second}/")
    page.evaluate("document.getElementById('approve-form').submit()")
    page.wait_for_selector(".msg.error")

    refusal = page.inner_text(".msg.error")
    assert refusal.startswith(
        "Решение не принято: решение по операции: проверка вторым фактором устарела"
    )
    assert PendingConfirmation.objects.get(pk=second).status == ConfirmationStatus.PENDING
    assert not JournalEntry.objects.filter(phase="approve", confirmation_id=second).exists()
