"""The people, in a real browser: an operator approves and rejects what an assistant prepared
over REST, an owner turns writes on in the admin, an auditor downloads the journal as CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.browser.conftest import RestAssistant, log_in
from tests.conftest import order_args
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import PendingConfirmation, TrackedOrder
from tools.people import operator_views as views

pytestmark = pytest.mark.browser


@pytest.fixture
def guarded_assistant(transactional_db: None, live_server: Any) -> RestAssistant:
    contour = create_contour(
        "guarded", mode="sandbox", name="Бухгалтерия", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.save()
    return RestAssistant(live_server.url, issue_key(contour, "claude", actor=SCAFFOLDING))


def test_operator_sees_the_prepared_order_appear_approves_it_and_the_call_succeeds(
    page: Any,
    person: Callable[..., User],
    guarded_assistant: RestAssistant,
    screenshots: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(views, "REFRESH_MS", 500)
    person("olga", "operators")
    log_in(page, "/approvals/", "olga")
    page.wait_for_selector("#queue-empty")
    page.evaluate("window.stillTheSamePage = true")

    args = order_args()
    status, first = guarded_assistant.call("create_order", args)
    confirmation_id = first["confirmation"]["id"]
    card = page.locator(f'[data-confirmation="{confirmation_id}"]')
    card.wait_for()

    assert (status, first["status"]) == (200, "confirmation_required")
    assert page.evaluate("window.stillTheSamePage") is True  # the list came without a reload
    text = card.inner_text().replace("\u00a0", " ")
    assert "Выставить счёт" in text and "Бухгалтерия (guarded)" in text
    assert "366,00 ₽ (НДС 66,00 ₽)" in text
    assert "ООО «Ромашка», ИНН 7710044140" in text and "осталось" in text
    page.screenshot(path=str(screenshots / "approvals-queue.png"), full_page=True)

    _, waiting = guarded_assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert waiting["status"] == "awaiting_approval"

    card.get_by_role("link", name="Открыть и решить").click()
    page.wait_for_selector("#lines")
    assert "Бронирование номера" in page.inner_text("#lines")
    page.screenshot(path=str(screenshots / "approval-detail.png"), full_page=True)
    page.click("#approve")
    page.wait_for_selector(".msg.success")
    assert page.inner_text("#status") == "одобрено"

    status, done = guarded_assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert (status, done["status"]) == (200, "ok"), done
    assert TrackedOrder.objects.count() == 1
    approval = JournalEntry.objects.get(phase="approve")
    assert (approval.actor, approval.confirmation_id) == ("user:olga", confirmation_id)


def test_operator_rejects_with_a_reason_and_the_assistant_gets_approval_rejected(
    page: Any, person: Callable[..., User], guarded_assistant: RestAssistant
):
    person("olga", "operators")
    args = order_args(description="Счёт без договора")
    _, first = guarded_assistant.call("create_order", args)
    log_in(page, "/approvals/", "olga")

    page.locator(f'[data-confirmation="{first["confirmation"]["id"]}"] a').click()
    page.fill("#reject-reason", "нет договора с клиентом")
    page.click("#reject")
    page.wait_for_selector(".msg.success")
    decided = page.inner_text("#decision")
    page.goto("/approvals/")
    empty = page.inner_text("#queue")

    status, answer = guarded_assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )

    assert "отклонено: olga" in decided and "нет договора с клиентом" in decided
    assert "Очередь пуста" in empty and "нет договора с клиентом" in empty
    assert (status, answer["code"]) == (409, "approval_rejected")
    assert "нет договора с клиентом" in answer["message"]
    assert PendingConfirmation.objects.get().status == "rejected"


def test_a_decided_item_cannot_be_decided_again_from_a_stale_page(
    page: Any, person: Callable[..., User], guarded_assistant: RestAssistant
):
    person("olga", "operators")
    _, first = guarded_assistant.call("create_order", order_args())
    log_in(page, f"/approvals/{first['confirmation']['id']}/", "olga")
    page.wait_for_selector("#approve")
    # Someone else decides meanwhile; this page still shows the buttons.
    from tools.pipeline import approvals

    approvals.decide(
        first["confirmation"]["id"], person("pavel", "operators"), approve=False, reason="дубль"
    )

    page.click("#approve")
    page.wait_for_selector(".msg.error")

    assert "решение уже принято: отклонено" in page.inner_text(".msg.error")
    assert page.locator("#approve").count() == 0


def test_owner_turns_writes_on_in_the_admin_and_the_next_call_is_allowed(
    page: Any, person: Callable[..., User], live_server: Any, screenshots: Path
):
    contour = create_contour("viewer", mode="sandbox", name="Только чтение", actor=SCAFFOLDING)
    assistant = RestAssistant(live_server.url, issue_key(contour, actor=SCAFFOLDING))
    person("oleg", "owners", staff=True)
    refused = assistant.call("create_order", order_args())
    assert (refused[0], refused[1]["code"]) == (403, "forbidden")

    log_in(page, f"/admin/tools/contour/{contour.pk}/change/", "oleg")
    assert "Шлюз Инвойсбокс для ассистентов" in page.inner_text("#header")
    page.screenshot(path=str(screenshots / "admin-contour-form.png"), full_page=True)
    page.check("input[name=toolsets][value=write]")
    page.click("input[name=_save]")
    page.wait_for_selector("#gained-tools")
    gained = page.inner_text("#gained-tools")
    page.screenshot(path=str(screenshots / "admin-confirm-writes.png"), full_page=True)
    contour.refresh_from_db()
    assert contour.toolsets == ["read"]  # nothing saved before the owner confirms
    page.click("#confirm-writes")
    page.wait_for_selector(".messagelist .success")

    status, body = assistant.call("create_order", order_args())

    assert "create_order" in gained and "cancel_order" in gained
    assert (status, body["status"]) == (200, "confirmation_required"), body
    change = JournalEntry.objects.get(phase="configure")
    assert (change.actor, change.channel) == ("user:oleg", "admin")
    assert change.arguments["changes"]["toolsets"] == {
        "before": ["read"],
        "after": ["read", "write"],
    }


def test_auditor_downloads_a_csv_whose_rows_match_the_journal(
    page: Any,
    person: Callable[..., User],
    guarded_assistant: RestAssistant,
    tmp_path: Path,
    screenshots: Path,
):
    guarded_assistant.call("get_order", {"order_id": "00000000-0000-0000-0000-000000000001"})
    guarded_assistant.call("create_order", order_args())
    person("anna", "auditors", staff=True)
    log_in(page, "/admin/audit/journalentry/", "anna")
    page.screenshot(path=str(screenshots / "admin-journal.png"), full_page=True)

    with page.expect_download() as download_info:
        page.click("#export-csv")
    download = download_info.value
    target = tmp_path / download.suggested_filename
    download.save_as(target)

    rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    stored = list(JournalEntry.objects.order_by("id"))
    assert target.suffix == ".csv"
    assert [(int(r["id"]), r["tool"], r["status"], r["hash"]) for r in rows] == [
        (e.id, e.tool, e.status, e.hash) for e in stored
    ]
    assert {r["tool"] for r in rows} == {"get_order", "create_order"}
