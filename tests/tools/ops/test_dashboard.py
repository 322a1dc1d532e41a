"""The owners' dashboard renders the journal's real numbers, and only for owners."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from audit import journal
from tests.conftest import Assistant
from tests.tools.ops.conftest import distinctive_order, valid_inn
from tools.models import Ceiling, CeilingKind, Contour
from tools.ops import charts


def section(html: str, slug: str) -> str:
    match = re.search(
        rf'<section class="contour" data-contour="{slug}">(.*?)</section>', html, re.S
    )
    assert match, f"no panel for {slug}"
    return match.group(1)


def totals(panel: str, period: str) -> tuple[int, int]:
    match = re.search(
        rf'data-period="{period}">.*?<b data-calls>(\d+)</b>.*?'
        r"<b class=\"refused\" data-refusals>(\d+)</b>",
        panel,
        re.S,
    )
    assert match, period
    return int(match.group(1)), int(match.group(2))


def charted(panel: str) -> list[tuple[int, int]]:
    return [
        (int(c), int(r))
        for c, r in re.findall(
            r'<svg[^>]*class="chart"[^>]*data-calls="(\d+)" data-refusals="(\d+)"', panel
        )
    ]


@pytest.mark.django_db
def test_only_owners_see_the_dashboard(contour: Contour, make_user: Callable[..., User]):
    operator, owner = make_user("olga", "operators"), make_user("oleg", "owners")
    anonymous, as_operator, as_owner = Client(), Client(), Client()
    as_operator.force_login(operator)
    as_owner.force_login(owner)

    assert anonymous.get("/dashboard/").status_code == 302
    assert anonymous.get("/dashboard/")["Location"].startswith("/accounts/login/")
    assert as_operator.get("/dashboard/").status_code == 403
    assert as_owner.get("/dashboard/").status_code == 200


@pytest.mark.django_db
def test_dashboard_renders_the_journal_numbers(
    assistant: Assistant,
    reader: Assistant,
    monkeypatch,
    make_user: Callable[..., User],
):
    Ceiling.objects.create(
        contour=assistant.contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=146400
    )
    Ceiling.objects.create(contour=assistant.contour, kind=CeilingKind.PER_HOUR, limit=10)
    args = distinctive_order(valid_inn(), "ООО «Панель»")
    token = assistant.call("create_order", args)[1]["confirmation"]["token"]  # 1 call
    assert assistant.call("create_order", {**args, "confirmation_token": token})[0] == 200  # 2
    assistant.call("find_orders", {})  # 3
    assistant.call("create_order", distinctive_order(valid_inn(), "ООО «Ждёт»"))  # 4, pending
    assistant.call("create_refund", {"order_id": "x"})  # 5, refused: toolset off
    assistant.call("no_such_tool", {})  # 6, refused
    reader.call("create_order", args)  # another contour's refusal: not acme's
    real_now = journal._now
    monkeypatch.setattr(journal, "_now", lambda: real_now() - timedelta(days=3))
    assistant.call("no_such_tool", {})  # 3 days ago: in the month, not in the day
    monkeypatch.undo()
    owner = Client()
    owner.force_login(make_user("oleg", "owners"))

    html = owner.get("/dashboard/").content.decode()

    acme = section(html, "acme")
    assert totals(acme, "24h") == (6, 2)
    assert totals(acme, "30d") == (7, 3)
    assert charted(acme) == [(6, 2), (7, 3)]
    assert totals(section(html, "viewer"), "24h") == (1, 1)
    assert "366,00 ₽" in acme  # invoiced, and used of the day's ceiling
    assert "25 %" in acme and "10 %" in acme  # 366 of 1 464 ₽; 1 of 10 writes
    pending = html.split("Старейшие ожидающие подтверждения", 1)[1]
    assert "create_order" in pending and "acme" in pending and "ассистента" in pending


@pytest.mark.django_db
def test_a_name_in_brackets_gets_no_second_pair(contour: Contour, make_user: Callable[..., User]):
    contour.name = "Демо-контур (песочница)"
    contour.save()
    owner = Client()
    owner.force_login(make_user("oleg", "owners"))

    html = owner.get("/dashboard/").content.decode()

    heading = re.sub(
        r"<[^>]+>|\s+",
        " ",
        re.search(r"<h2>(.*?)</h2>", section(html, contour.slug), re.S).group(1),
    ).strip()
    assert "))" not in heading and ") (" not in heading, heading
    assert heading.startswith("Демо-контур (песочница)") and contour.slug in heading


@pytest.mark.django_db
def test_the_oldest_pending_confirmation_comes_first(
    assistant: Assistant, make_user: Callable[..., User]
):
    first = assistant.call("create_order", distinctive_order(valid_inn(), "ООО «Старый»"))[1]
    assistant.call("create_order", distinctive_order(valid_inn(), "ООО «Новый»"))
    from tools.models import PendingConfirmation

    PendingConfirmation.objects.filter(pk=first["confirmation"]["id"]).update(
        created_at=timezone.now() - timedelta(hours=2), amount=12345
    )
    owner = Client()
    owner.force_login(make_user("oleg", "owners"))

    pending = owner.get("/dashboard/").content.decode().split("Старейшие", 1)[1]

    rows = re.findall(r"<tr><td>(.*?)</td>", pending)
    assert len(rows) == 2
    assert rows[0].startswith("2\u00a0час")
    assert pending.index("123,45") < pending.index("366,00")


@pytest.mark.parametrize(
    ("value", "top"), [(0, 1), (1, 1), (3, 5), (7, 10), (10, 10), (11, 20), (180, 200), (501, 1000)]
)
def test_chart_axis_top_is_a_round_number(value: int, top: int):
    assert charts.nice_ceiling(value) == top


def test_chart_text_is_escaped():
    bars: list[Any] = [charts.Bar("<b>", "<script>x</script>", 2, 1)]

    svg = charts.bar_chart(bars, title="a&b", label_every=1)

    assert "<script>" not in svg and "&lt;script&gt;" in svg and "a&amp;b" in svg
