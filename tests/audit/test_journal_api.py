"""GET /api/v1/journal and /api/v1/journal/export: auditors only, filtered, streamed."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections
from django.test import AsyncClient, Client

from audit.actors import SCAFFOLDING
from audit.export import FIELDS, spreadsheet_safe
from audit.models import AuditorToken, JournalEntry
from tests.conftest import logged_in
from tools.contours.services import create_contour

pytestmark = pytest.mark.django_db

EXPORT = "/api/v1/journal/export"


def body(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


@pytest.fixture(autouse=True)
def contours(db: None) -> None:
    """The contours the entries name: auditors hold their roles on these."""
    create_contour("demo", mode="sandbox", actor=SCAFFOLDING)
    create_contour("shop", mode="sandbox", actor=SCAFFOLDING)


@pytest.fixture
def entries(write: Callable[..., JournalEntry]) -> list[JournalEntry]:
    return [
        write(tool="get_order", status="ok"),
        write(
            tool="create_order",
            phase="prepare",
            status="confirmation_required",
            confirmation_id="c-1",
        ),
        write(
            tool="create_order",
            phase="approve",
            status="ok",
            actor="user:olga",
            channel="ui",
            confirmation_id="c-1",
            code="approved",
        ),
        write(
            tool="create_order", phase="execute", status="ok", confirmation_id="c-1", contour="shop"
        ),
        write(
            tool="get_order",
            status="error",
            code="upstream_unavailable",
            message='=HYPERLINK("http://evil")',
        ),
    ]


def test_nobody_without_credentials_reads_the_journal(entries: list[JournalEntry]):
    response = Client().get(EXPORT, {"format": "csv"})

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_logged_in_non_auditor_is_forbidden(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    operator = logged_in(make_user("olga", "operators"))

    assert operator.get(EXPORT).status_code == 403
    assert operator.get("/api/v1/journal").json()["code"] == "forbidden"


def test_an_auditor_session_downloads_csv_matching_the_journal(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    response = logged_in(make_user("anna", "auditors")).get(EXPORT, {"format": "csv"})

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(body(response))))
    assert [int(r["id"]) for r in rows] == [e.id for e in entries]
    for row, entry in zip(rows, entries, strict=True):
        assert row["hash"] == entry.hash
        assert row["message"] == spreadsheet_safe(entry.message)
        assert (row["actor"], row["confirmation_id"]) == (entry.actor, entry.confirmation_id)


def test_csv_defuses_spreadsheet_formulas_but_jsonl_keeps_the_stored_value(
    entries: list[JournalEntry],
    make_user: Callable[..., User],
):
    auditor = logged_in(make_user("anna", "auditors"))

    csv_rows = list(csv.DictReader(io.StringIO(body(auditor.get(EXPORT, {"format": "csv"})))))
    jsonl = [
        json.loads(line) for line in body(auditor.get(EXPORT, {"format": "jsonl"})).splitlines()
    ]

    assert csv_rows[-1]["message"] == '\'=HYPERLINK("http://evil")'
    assert jsonl[-1]["message"] == '=HYPERLINK("http://evil")'
    assert [spreadsheet_safe(v) for v in ("+1", "-x", "@a", "\tx", "ok", 5)] == [
        "'+1",
        "'-x",
        "'@a",
        "'\tx",
        "ok",
        5,
    ]


def test_the_export_names_who_decided_each_confirmation(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    response = logged_in(make_user("anna", "auditors")).get(
        EXPORT, {"format": "jsonl", "tool": "create_order"}
    )

    lines = [json.loads(line) for line in body(response).splitlines()]
    by_confirmation = {}
    for line in lines:
        by_confirmation.setdefault(line["confirmation_id"], []).append(
            (line["phase"], line["actor"])
        )
    assert by_confirmation["c-1"] == [
        ("prepare", "gw_abc123"),
        ("approve", "user:olga"),
        ("execute", "gw_abc123"),
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"tool": "get_order"}, [0, 4]),
        ({"status": "error"}, [4]),
        ({"contour": "shop"}, [3]),
        ({"tool": "create_order", "status": "ok"}, [2, 3]),
    ],
)
def test_filters_by_tool_status_and_contour(
    entries: list[JournalEntry],
    query: dict[str, str],
    expected: list[int],
    make_user: Callable[..., User],
):
    auditor = logged_in(make_user("anna", "auditors"))

    ids = [
        json.loads(line)["id"]
        for line in body(auditor.get(EXPORT, {"format": "jsonl", **query})).splitlines()
    ]

    assert ids == [entries[i].id for i in expected]


def test_filters_by_time_range(
    write: Callable[..., JournalEntry], monkeypatch, make_user: Callable[..., User]
):
    from datetime import UTC, datetime

    from audit import journal

    made = []
    for day in (1, 2, 3):
        moment = datetime(2025, 6, day, 12, tzinfo=UTC)
        monkeypatch.setattr(journal, "_now", lambda moment=moment: moment)
        made.append(write())

    response = logged_in(make_user("anna", "auditors")).get(
        EXPORT, {"format": "jsonl", "since": "2025-06-02", "until": "2025-06-03T15:00:00+03:00"}
    )

    assert [json.loads(line)["id"] for line in body(response).splitlines()] == [made[1].id]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"format": "xml"}, "format"),
        ({"since": "yesterday"}, "since"),
        ({"status": "fine"}, "status"),
        ({"since": "2025-06-02", "until": "2025-06-01"}, "until"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(
    entries: list[JournalEntry],
    query: dict[str, str],
    field: str,
    make_user: Callable[..., User],
):
    response = logged_in(make_user("anna", "auditors")).get(EXPORT, query)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_arguments"
    assert response.json()["problems"][0]["field"] == field


def test_an_auditor_token_exports_and_a_revoked_one_does_not(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    anna = make_user("anna", "auditors")
    token, raw = AuditorToken.issue(anna, "nightly")

    ok = Client().get(EXPORT, {"format": "jsonl"}, HTTP_AUTHORIZATION=f"Bearer {raw}")
    token.revoke()
    revoked = Client().get(EXPORT, {"format": "jsonl"}, HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert ok.status_code == 200 and len(body(ok).splitlines()) == len(entries)
    assert revoked.status_code == 401
    assert AuditorToken.objects.get().token_hash != raw and raw.startswith(token.prefix)


def test_a_token_stops_working_when_its_user_leaves_the_auditors(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    anna = make_user("anna", "auditors")
    _, raw = AuditorToken.issue(anna)
    anna.contour_roles.all().delete()

    response = Client().get(EXPORT, HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert response.status_code == 403


def test_a_wrong_token_is_refused_even_with_an_auditor_session(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    response = logged_in(make_user("anna", "auditors")).get(
        EXPORT, HTTP_AUTHORIZATION="Bearer iba_wrong"
    )

    assert response.status_code == 401


def test_a_contour_key_is_no_auditor_token(entries: list[JournalEntry], assistant: Any):
    response = Client().get(EXPORT, HTTP_AUTHORIZATION=f"Bearer {assistant.key}")

    assert response.status_code == 401


def test_a_superuser_may_export(entries: list[JournalEntry], make_user: Callable[..., User]):
    response = logged_in(make_user("root", superuser=True)).get(EXPORT, {"format": "csv"})

    assert response.status_code == 200


def test_the_list_is_paged_by_id(entries: list[JournalEntry], make_user: Callable[..., User]):
    auditor = logged_in(make_user("anna", "auditors"))

    first = auditor.get("/api/v1/journal", {"limit": 2, "tool": "create_order"}).json()
    second = auditor.get(first["next"]).json()
    ui_only = auditor.get("/api/v1/journal", {"channel": "ui"}).json()

    assert [r["id"] for r in first["results"]] == [entries[1].id, entries[2].id]
    assert [r["id"] for r in second["results"]] == [entries[3].id]
    assert second["next"] is None
    assert list(first["results"][0]) == list(FIELDS)
    assert [r["actor"] for r in ui_only["results"]] == ["user:olga"]
    assert auditor.get("/api/v1/journal", {"limit": "x"}).status_code == 400


@pytest.mark.django_db(transaction=True)  # the view runs on another thread's connection
def test_under_asgi_the_export_is_an_async_stream(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    anna = make_user("anna", "auditors")
    _, raw = AuditorToken.issue(anna)

    async def fetch() -> tuple[Any, list[bytes]]:
        response = await AsyncClient().get(
            EXPORT, {"format": "jsonl"}, headers={"Authorization": f"Bearer {raw}"}
        )
        parts = [part async for part in response.streaming_content]
        # The export read on asgiref's one sync thread; the test client leaves its
        # connection open, and the test database can't be dropped while it is.
        await sync_to_async(connections.close_all)()
        return response, parts

    response, parts = asyncio.run(fetch())

    # An async iterator: Django's ASGI handler would read a sync one whole into memory first.
    assert response.is_async
    assert len(b"".join(parts).decode().splitlines()) == len(entries)


def test_export_journal_command_filters_by_tool_and_status(entries: list[JournalEntry]):
    out = io.StringIO()

    call_command(
        "export_journal",
        "--format",
        "jsonl",
        "--tool",
        "create_order",
        "--status",
        "ok",
        stdout=out,
    )

    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [
        entries[2].id,
        entries[3].id,
    ]


def test_excel_option_gives_semicolons_and_a_bom_with_the_same_rows(
    entries: list[JournalEntry], make_user: Callable[..., User]
):
    # given
    auditor = logged_in(make_user("alla", "auditors"))

    # when
    plain = body(auditor.get(EXPORT, {"format": "csv"}))
    excel = body(auditor.get(EXPORT, {"format": "csv", "excel": "1"}))

    # then: a BOM first, ';' between cells, and the very same cells
    assert excel.startswith("\ufeff") and not plain.startswith("\ufeff")
    assert excel[1:].splitlines()[0] == ";".join(FIELDS)
    assert list(csv.reader(io.StringIO(excel[1:]), delimiter=";")) == list(
        csv.reader(io.StringIO(plain))
    )
