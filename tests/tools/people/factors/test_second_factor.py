"""A second factor behind operators' decisions: TOTP codes computed with pyotp, as an
authenticator app does, driven through the operator pages (HTTP to the app)."""

from __future__ import annotations

import html
import io
import re
import time
from base64 import b32encode
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import JournalEntry
from tests.conftest import Assistant, Clock
from tests.tools.conftest import logged_in, prepare_order
from tools.models import ConfirmationStatus, PendingConfirmation
from tools.people.factors import devices

pytestmark = pytest.mark.django_db


@pytest.fixture
def required(settings: Any) -> None:
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True


def app_for(user: User) -> tuple[TOTPDevice, pyotp.TOTP]:
    """A confirmed TOTP device and the authenticator app that holds its secret."""
    device = TOTPDevice.objects.create(user=user, name="Телефон Ольги", confirmed=True)
    return device, pyotp.TOTP(b32encode(device.bin_key).decode())


def next_code(app: pyotp.TOTP, steps: int = 1) -> str:
    """A code of a later 30-second step (django-otp accepts one step of drift): each test
    decision needs a code not used before."""
    return app.at(time.time() + 30 * steps)


def pending(assistant: Assistant, number: int = 1) -> str:
    """A write waiting for an operator; a different number makes a different write (the
    same one twice would be one confirmation)."""
    _, body = prepare_order(assistant, description=f"Бронирование, счёт {number}")
    return str(body["confirmation"]["id"])


def decide(http: Client, cid: str, code: str = "", decision: str = "approve") -> str:
    data = {"decision": decision, "reason": "проверено" if decision == "reject" else ""}
    if code:
        data["otp_code"] = code
    page = http.post(f"/approvals/{cid}/", data, follow=True).content.decode()
    return html.unescape(page)


def status_of(cid: str) -> str:
    return PendingConfirmation.objects.get(pk=cid).status


def decisions_journaled() -> int:
    return JournalEntry.objects.filter(phase__in=["approve", "reject"]).count()


def test_without_a_code_the_approval_is_refused_and_stays_pending(
    required: None, guarded_assistant: Assistant, olga: User
):
    app_for(olga)
    cid = pending(guarded_assistant)
    http = logged_in(olga)

    form = html.unescape(http.get(f"/approvals/{cid}/").content.decode())
    approve = decide(http, cid)
    reject = decide(http, cid, decision="reject")

    assert 'name="otp_code"' in form and "подтверждается вторым фактором" in form
    assert "Решение не принято: решение по операции: подтвердите вход вторым фактором" in approve
    assert "Решение не принято" in reject
    assert status_of(cid) == ConfirmationStatus.PENDING
    assert decisions_journaled() == 0


def test_a_wrong_code_is_refused_and_attempts_are_throttled(
    required: None, settings: Any, guarded_assistant: Assistant, olga: User
):
    # A minute's throttle after one failure: the right code comes too soon however slow the run.
    settings.OTP_TOTP_THROTTLE_FACTOR = 60
    _, app = app_for(olga)
    cid = pending(guarded_assistant)
    http = logged_in(olga)
    wrong = f"{(int(app.now()) + 1) % 1_000_000:06d}"

    first = decide(http, cid, wrong)
    right_too_soon = decide(http, cid, app.now())

    assert "код не подошёл" in first
    assert re.search(r"слишком много неверных кодов: попробуйте снова через \d+ с", right_too_soon)
    assert status_of(cid) == ConfirmationStatus.PENDING
    assert decisions_journaled() == 0
    refusals = JournalEntry.objects.filter(code__startswith="second_factor_", status="rejected")
    assert list(refusals.order_by("id").values_list("code", flat=True)) == [
        "second_factor_invalid",
        "second_factor_throttled",
    ]
    assert wrong not in str(list(refusals.values_list("arguments", "message")))


def test_the_right_code_approves_and_the_record_names_the_device(
    required: None, guarded_assistant: Assistant, olga: User
):
    _, app = app_for(olga)
    cid = pending(guarded_assistant)

    page = decide(logged_in(olga), cid, app.now())

    assert "Одобрено" in page
    decided = PendingConfirmation.objects.get(pk=cid)
    assert decided.status == ConfirmationStatus.APPROVED
    assert (decided.factor_kind, decided.factor_device) == ("totp", "Телефон Ольги")
    assert decided.factor_checked_at is not None
    assert decided.factor_checked_at <= decided.decided_at
    entry = JournalEntry.objects.get(phase="approve", confirmation_id=cid)
    factor = entry.arguments["second_factor"]
    assert (factor["kind"], factor["device"], factor["checked"]) == ("totp", "Телефон Ольги", True)
    assert factor["checked_at"] == decided.factor_checked_at.isoformat()
    assert "проверен" in page and "Телефон Ольги" in page


def test_a_code_reused_within_its_window_is_refused(
    required: None, guarded_assistant: Assistant, olga: User
):
    _, app = app_for(olga)
    first, second = pending(guarded_assistant, 1), pending(guarded_assistant, 2)
    code = app.now()
    decide(logged_in(olga), first, code)

    # Someone who saw the code over her shoulder, in a session of their own.
    replay = decide(logged_in(olga), second, code)

    assert status_of(first) == ConfirmationStatus.APPROVED
    assert "код не подошёл" in replay
    assert status_of(second) == ConfirmationStatus.PENDING


def test_after_the_step_up_window_the_next_approval_asks_again(
    required: None, settings: Any, guarded_assistant: Assistant, olga: User, clock: Clock
):
    settings.GATEWAY_STEP_UP_SECONDS = 300
    _, app = app_for(olga)
    first, within, after = (pending(guarded_assistant, number) for number in (1, 2, 3))
    http = logged_in(olga)
    decide(http, first, app.now())
    decide(http, within)  # no code: the check of a moment ago still holds

    clock.advance(301)
    stale = decide(http, after)
    asked = html.unescape(http.get(f"/approvals/{after}/").content.decode())
    again = decide(http, after, next_code(app))

    assert [status_of(first), status_of(within)] == [ConfirmationStatus.APPROVED] * 2
    assert "проверка вторым фактором устарела" in stale
    assert 'name="otp_code"' in asked
    assert "Одобрено" in again and status_of(after) == ConfirmationStatus.APPROVED


def test_a_person_without_a_device_is_sent_to_enrollment_and_back(
    required: None, guarded_assistant: Assistant, olga: User, clock: Clock
):
    """Where the factor is required, the first device is prepared by an administrator
    (manage.py add_totp) and confirmed by its first code; the password alone enrols none."""
    cid = pending(guarded_assistant)
    http = logged_in(olga)

    sent = http.get(f"/approvals/{cid}/")
    assert sent.status_code == 302
    assert sent["Location"] == f"/account/second-factor/?next=%2Fapprovals%2F{cid}%2F"
    reason = html.unescape(http.get(sent["Location"]).content.decode())
    assert "Нужен второй фактор: решения по операциям этого контура принимают только" in reason
    assert "manage.py add_totp olga" in reason and 'id="start-totp"' not in reason

    refused = http.post(
        "/account/second-factor/",
        {"action": "start_totp", "next": f"/approvals/{cid}/"},
        follow=True,
    )
    assert "manage.py add_totp olga" in html.unescape(refused.content.decode())
    assert not TOTPDevice.objects.filter(user=olga).exists()

    out = io.StringIO()
    call_command("add_totp", "olga", stdout=out, stderr=io.StringIO())
    app = pyotp.TOTP(parse_qs(urlsplit(out.getvalue().strip()).query)["secret"][0])
    page = html.unescape(http.get(sent["Location"]).content.decode())
    assert 'id="secret"' not in page and "<svg" not in page and 'id="prepared"' in page
    assert app.secret not in page.replace(" ", "")

    wrong = http.post(
        "/account/second-factor/",
        {"action": "confirm_prepared", "code": "000000", "next": f"/approvals/{cid}/"},
        follow=True,
    )
    assert "Код не подошёл" in html.unescape(wrong.content.decode())
    assert devices.confirmed(olga) == []
    clock.advance(1.1)  # django-otp throttles the next try for 1 s after one failure
    back = http.post(
        "/account/second-factor/",
        {"action": "confirm_prepared", "code": app.now(), "next": f"/approvals/{cid}/"},
    )
    assert back["Location"] == f"/approvals/{cid}/"
    assert [devices.kind_of(d) for d in devices.confirmed(olga)] == ["totp"]
    # The prepared device's first code was a fresh check: the decision needs no second one.
    assert "Одобрено" in decide(http, cid)
    assert JournalEntry.objects.filter(code="second_factor_enrolled").count() == 1


def test_backup_codes_each_work_once(
    required: None, guarded_assistant: Assistant, olga: User, clock: Clock
):
    _, app = app_for(olga)
    first, second = pending(guarded_assistant, 1), pending(guarded_assistant, 2)
    http = logged_in(olga)
    refused = http.post("/account/second-factor/", {"action": "backup_codes"}, follow=True)
    assert "сначала подтвердите вход" in html.unescape(refused.content.decode())
    http.post("/account/second-factor/verify/", {"code": app.now()})
    page = http.post("/account/second-factor/", {"action": "backup_codes"}).content.decode()
    codes = re.findall(r"<li>([a-z0-9]+)</li>", page)
    assert len(codes) == 10

    used = decide(logged_in(olga), first, codes[0])
    again = decide(logged_in(olga), second, codes[0])

    assert "Одобрено" in used
    assert PendingConfirmation.objects.get(pk=first).factor_kind == "static"
    assert "код не подошёл" in again, re.findall(r'class="msg[^<]*', again)
    assert status_of(second) == ConfirmationStatus.PENDING
    assert devices.backup_codes_left(olga) == 9
    clock.advance(1.1)  # the failed reuse throttles the codes for 1 s
    assert "Одобрено" in decide(logged_in(olga), second, codes[1])


def test_the_demo_decides_without_a_factor_and_records_none(
    guarded_assistant: Assistant, olga: User
):
    cid = pending(guarded_assistant)

    page = decide(logged_in(olga), cid)

    assert "Одобрено" in page
    decided = PendingConfirmation.objects.get(pk=cid)
    assert (decided.factor_kind, decided.factor_checked_at) == ("", None)
    entry = JournalEntry.objects.get(phase="approve", confirmation_id=cid)
    assert entry.arguments["second_factor"] == {
        "kind": "",
        "device": "",
        "checked": False,
        "checked_at": None,
    }


def test_a_contour_may_be_stricter_than_the_gateway(guarded_assistant: Assistant, olga: User):
    contour = guarded_assistant.contour
    contour.require_second_factor = True
    contour.save(update_fields=["require_second_factor"])
    _, app = app_for(olga)
    cid = pending(guarded_assistant)
    http = logged_in(olga)

    refused = decide(http, cid)
    approved = decide(http, cid, app.now())

    assert "подтвердите вход вторым фактором" in refused
    assert "Одобрено" in approved
