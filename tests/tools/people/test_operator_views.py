"""The operator pages: the queue with its Russian summary, the fragment it polls, decisions."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant
from tests.tools.conftest import logged_in, prepare_order
from tools.contours.services import create_contour
from tools.models import ApiKey, Contour, PendingConfirmation
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db


def test_the_queue_shows_what_waits_in_russian(guarded_assistant: Assistant, olga: User):
    _, body = prepare_order(guarded_assistant)

    page = logged_in(olga).get("/approvals/").content.decode()

    assert body["confirmation"]["id"] in page
    assert "Выставить счёт" in page
    assert "Бухгалтерия (guarded)" in page
    assert "366,00\u00a0₽" in page or "366,00 ₽" in page
    assert "НДС 66,00" in page
    assert "ООО «Ромашка»" in page and "ИНН 7710044140" in page
    assert "осталось" in page and "мин" in page
    assert "в этом контуре все записи одобряет оператор" in page


def test_the_fragment_holds_the_list_without_the_page(guarded_assistant: Assistant, olga: User):
    http = logged_in(olga)
    empty = http.get("/approvals/rows/").content.decode()
    _, body = prepare_order(guarded_assistant)

    rows = http.get("/approvals/rows/").content.decode()

    assert "Очередь пуста" in empty
    assert f'data-confirmation="{body["confirmation"]["id"]}"' in rows
    assert "<html" not in rows


def test_the_queue_asks_for_a_login_and_refuses_non_operators(make_user: Callable[..., User]):
    anonymous = Client().get("/approvals/")
    outsider = logged_in(make_user("ivan")).get("/approvals/")
    outsider_rows = logged_in(make_user("vera")).get("/approvals/rows/")

    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/?next=/approvals/")
    assert outsider.status_code == 403
    assert "нет роли оператора ни в одном контуре" in outsider.content.decode()
    assert outsider_rows.status_code == 403


def test_the_detail_page_lists_lines_and_approving_lets_the_next_call_run(
    guarded_assistant: Assistant, olga: User
):
    args, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]
    http = logged_in(olga)

    detail = http.get(f"/approvals/{cid}/").content.decode()
    decided = http.post(f"/approvals/{cid}/", {"decision": "approve"}, follow=True)
    status, done = guarded_assistant.call(
        "create_order", {**args, "confirmation_token": body["confirmation"]["token"]}
    )

    assert "Бронирование номера" in detail and "122,00" in detail and "22%" in detail
    assert 'id="approve-form"' in detail
    assert "Одобрено" in decided.content.decode()
    assert (status, done["status"]) == (200, "ok"), done


def test_rejecting_with_a_reason_is_what_the_assistant_hears(
    guarded_assistant: Assistant, olga: User
):
    args, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]

    logged_in(olga).post(
        f"/approvals/{cid}/", {"decision": "reject", "reason": "нет договора с клиентом"}
    )
    status, answer = guarded_assistant.call(
        "create_order", {**args, "confirmation_token": body["confirmation"]["token"]}
    )

    assert (status, answer["code"]) == (409, "approval_rejected")
    assert "нет договора с клиентом" in answer["message"]
    entry = JournalEntry.objects.get(phase="reject")
    assert (entry.actor, entry.channel, entry.confirmation_id) == ("user:olga", "ui", cid)


def test_a_decided_item_says_so_and_cannot_be_decided_again(
    guarded_assistant: Assistant, olga: User
):
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]
    http = logged_in(olga)
    http.post(f"/approvals/{cid}/", {"decision": "reject", "reason": "дубль"})

    again = http.post(f"/approvals/{cid}/", {"decision": "approve"}, follow=True)
    page = again.content.decode()

    assert "Решение не принято: решение уже принято: отклонено" in page
    assert 'id="approve-form"' not in page
    assert PendingConfirmation.objects.get().status == "rejected"
    assert JournalEntry.objects.filter(phase__in=["approve", "reject"]).count() == 1


def test_a_reject_without_reason_is_refused_on_the_server(guarded_assistant: Assistant, olga: User):
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]

    page = (
        logged_in(olga)
        .post(f"/approvals/{cid}/", {"decision": "reject", "reason": ""}, follow=True)
        .content.decode()
    )

    assert "при отклонении нужна причина" in page
    assert PendingConfirmation.objects.get().status == "pending"


def test_decisions_need_the_csrf_token(guarded_assistant: Assistant, olga: User):
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]
    http = logged_in(olga, enforce_csrf_checks=True)

    forged = http.post(f"/approvals/{cid}/", {"decision": "approve"})

    assert forged.status_code == 403
    assert PendingConfirmation.objects.get().status == "pending"


def test_own_key_items_show_a_note_instead_of_the_buttons(guarded_assistant: Assistant, olga: User):
    ApiKey.objects.update(user=olga)
    _, body = prepare_order(guarded_assistant)
    cid = body["confirmation"]["id"]

    queue = logged_in(olga).get("/approvals/").content.decode()
    detail = logged_in(olga).get(f"/approvals/{cid}/").content.decode()
    forced = logged_in(olga).post(f"/approvals/{cid}/", {"decision": "approve"}, follow=True)

    assert "Подготовлено вашим ключом API" in queue
    assert 'id="approve-form"' not in detail
    assert "собственный ключ" in forced.content.decode()
    assert PendingConfirmation.objects.get().status == "pending"


def test_an_operator_of_other_contours_gets_404_for_this_one(
    guarded_assistant: Assistant, make_user: Callable[..., User]
):
    other = create_contour("elsewhere", mode="sandbox", actor=SCAFFOLDING)
    pavel = make_user("pavel")
    role_service.grant(pavel, "operator", other, actor="test")
    _, body = prepare_order(guarded_assistant)

    response = logged_in(pavel).get(f"/approvals/{body['confirmation']['id']}/")

    assert response.status_code == 404


def test_the_detail_page_names_the_key_by_its_label_and_holder(
    guarded: Contour, olga: User, make_user: Callable[..., User]
):
    # given a key with a label, held by anna, that prepares a write
    anna = make_user("anna")
    key, raw = ApiKey.issue(guarded, label="Claude, бухгалтерия", user=anna)
    _, body = prepare_order(Assistant(http=Client(), key=raw, contour=guarded))

    # when the operator opens it
    detail = logged_in(olga).get(f"/approvals/{body['confirmation']['id']}/").content.decode()

    # then
    preparer = re.search(r'<dd id="preparer">(.*?)</dd>', detail, re.S).group(1)
    assert preparer.startswith(f"ключ «Claude, бухгалтерия» ({key.prefix}…), владелец anna,")
