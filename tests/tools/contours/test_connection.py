"""The connection check (tools.contours.connection) and `manage.py check_contour`, against the
bundled sandbox over its real HTTP routes: token, shop and one read, reported in Russian."""

from __future__ import annotations

import io
import uuid

import pytest
from django.core.management import CommandError, call_command

from audit.actors import SCAFFOLDING
from tests.conftest import Assistant, order_args
from tools.contours.connection import check_connection
from tools.contours.services import create_contour
from tools.models import Contour

pytestmark = pytest.mark.django_db


def issue_one_order(assistant: Assistant) -> None:
    args = order_args()
    _, first = assistant.call("create_order", args)
    token = first["confirmation"]["token"]
    status, done = assistant.call("create_order", {**args, "confirmation_token": token})
    assert status == 200 and done["status"] == "ok", done


def test_a_working_contour_reports_the_user_the_read_and_its_own_shop(
    contour: Contour, assistant: Assistant
) -> None:
    # given an order of the contour's shop
    issue_one_order(assistant)

    # when
    report = check_connection(contour)

    # then
    assert report.ok, report.lines()
    assert [step.ok for step in report.steps] == [True, True, True]
    assert "счетов у магазина: 1" in report.steps[1].message
    assert contour.merchant_id in report.steps[2].message
    assert contour.api_token not in "\n".join(report.lines())


def test_a_merchant_id_of_another_shop_is_named_as_the_problem(
    contour: Contour, assistant: Assistant
) -> None:
    # given the token's shop has an order, and the contour names another shop
    issue_one_order(assistant)
    other = str(uuid.uuid4())
    Contour.objects.filter(pk=contour.pk).update(merchant_id=other)
    contour.refresh_from_db()

    # when
    report = check_connection(contour)

    # then
    assert not report.ok
    assert report.steps[-1].ok is False
    assert f"а в контуре указан {other}" in report.summary


def test_a_shop_without_orders_passes_but_says_the_shop_was_not_compared() -> None:
    contour = create_contour("fresh", mode="sandbox", own_sandbox_merchant=True, actor=SCAFFOLDING)

    report = check_connection(contour)

    assert report.ok
    assert report.steps[-1].ok is None
    assert "счетов ещё нет" in report.steps[-1].message


def test_a_token_the_api_refuses_is_reported_with_where_to_copy_it() -> None:
    contour = create_contour("typo", mode="sandbox", own_sandbox_merchant=True, actor=SCAFFOLDING)
    contour.api_token = "0" * 32
    contour.save()

    report = check_connection(contour)

    assert not report.ok and len(report.steps) == 1
    assert "не принял токен" in report.summary and "«Интеграция (API)»" in report.summary


def test_an_l3_token_is_refused_before_anything_is_sent() -> None:
    contour = create_contour("l3", mode="sandbox", own_sandbox_merchant=True, actor=SCAFFOLDING)
    contour.api_token = "29078-API:" + "ab" * 16
    contour.save()

    report = check_connection(contour)

    assert not report.ok
    assert "токен API l3" in report.summary
    assert "29078" not in report.summary


def test_check_contour_command_prints_each_step_and_fails_with_the_reason(
    contour: Contour, assistant: Assistant
) -> None:
    issue_one_order(assistant)
    out = io.StringIO()
    call_command("check_contour", contour.slug, stdout=out)
    assert "[да] токен: принят" in out.getvalue()
    assert out.getvalue().rstrip().endswith(f"Подключение контура {contour.slug} работает")

    Contour.objects.filter(pk=contour.pk).update(merchant_id=str(uuid.uuid4()))
    with pytest.raises(CommandError, match="токен видит магазин"):
        call_command("check_contour", contour.slug, stdout=io.StringIO())
    with pytest.raises(CommandError, match="контура 'absent' нет"):
        call_command("check_contour", "absent", stdout=io.StringIO())
