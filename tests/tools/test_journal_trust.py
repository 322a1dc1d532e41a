"""The journal keeps only what it can vouch for, and no call runs without its journal.

With the database away and the spool unwritable, every answer says where its entry is
(`journal_state`), a call that did nothing is refused as `journal_unavailable`, and no write
reaches the upstream (the sandbox). The spool's marks live outside the caller's arguments; an
unverified credential is journaled as anonymous; anonymous refusals are sampled.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from adapters.mcp.http import build_mcp_app
from audit import spool
from audit.models import JournalEntry
from audit.walk import verify_chain
from tests.conftest import Assistant, Clock, sandbox_orders
from tests.tools.pipeline.test_database_faults import database_down
from tests.tools.test_unknown_outcomes import confirmed_order
from tools.models import Operation
from tools.ops.metrics import ANONYMOUS_REFUSALS
from tools.pipeline import anonymous

ORDER = {"order_id": "x" * 36}


@pytest.fixture(autouse=True)
def _state_dir(settings: Any, tmp_path: Path) -> None:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def spool_unwritable(tmp_path: Path) -> None:
    """The spool's directory is a file: every spool write fails with an OSError (as ENOSPC or
    EACCES would; chmod does not stop root)."""
    (tmp_path / "journal-spool").write_text("not a directory")


def journal_tables(sql: str) -> bool:
    return "audit_" in sql


@pytest.mark.django_db(transaction=True)
def test_a_write_whose_attempt_no_place_can_journal_never_reaches_the_upstream(
    assistant: Assistant, client: Client, tmp_path: Path
):
    confirmed = confirmed_order(assistant, description="Журнал недоступен")
    spool_unwritable(tmp_path)

    # The database takes everything but the journal: the claim's own entry fails.
    with database_down(journal_tables):
        status, answer = assistant.call("create_order", confirmed)

    assert (status, answer["code"]) == (503, "journal_unavailable"), answer
    assert answer["journal_state"] == "unavailable" and answer["journal_id"] is None
    assert answer["journal_error"]["code"] == "journal_unavailable"
    assert answer["data"]["refused_code"] == "database_unavailable"
    assert "journal_pending" not in answer
    assert sandbox_orders(client) == []
    assert not Operation.objects.exists()  # no entry, no claim


@pytest.mark.django_db(transaction=True)
def test_with_the_database_and_the_spool_away_every_answer_says_its_journal_state(
    assistant: Assistant, client: Client, tmp_path: Path
):
    confirmed = confirmed_order(assistant, description="Всё недоступно")
    spool_unwritable(tmp_path)

    with database_down():
        executed = assistant.call("create_order", confirmed)
        prepared = assistant.call("create_order", {**confirmed, "confirmation_token": ""})
        read = assistant.call("get_order", ORDER)

    # Refusals of one kind within the sampling period are only counted when their sample
    # was kept; this one's was kept nowhere, so none answers `sampled` for it: each says
    # journal_unavailable itself (the chaos campaign's spool_full scenario, issue 39.5).
    for status, answer in (executed, prepared, read):
        assert status == 503 and answer["code"] == "journal_unavailable", answer
        assert answer["journal_state"] == "unavailable"
    assert sandbox_orders(client) == []


@pytest.mark.django_db(transaction=True)
def test_a_read_whose_entry_no_place_keeps_says_so_beside_its_result(
    assistant: Assistant, tmp_path: Path
):
    spool_unwritable(tmp_path)

    with database_down(journal_tables):
        status, answer = assistant.call("find_orders", {"page_size": 1})

    assert (status, answer["code"]) == (200, "ok"), answer
    assert answer["journal_state"] == "unavailable"
    assert answer["journal_error"]["code"] == "journal_unavailable"


@pytest.mark.django_db(transaction=True)
def test_marks_planted_in_the_arguments_drop_no_spooled_entry(assistant: Assistant):
    with database_down():
        _, refused = assistant.call("get_order", ORDER)
    spool_id = refused["journal_pending"]

    # The database is back; this call's entry is appended, then the spool drained.
    _, planted = assistant.call(
        "get_order",
        {**ORDER, "_spooled": {"id": spool_id, "duplicate_of": refused.get("journal_id") or 1}},
    )

    assert spool.pending() == 0
    [drained] = JournalEntry.objects.filter(code="database_unavailable")
    assert (drained.spool_id, drained.duplicate_of) == (spool_id, None)
    caller = JournalEntry.objects.get(id=planted["journal_id"])
    assert (caller.spool_id, caller.duplicate_of) == ("", None)
    assert verify_chain() is None


@pytest.mark.django_db(transaction=True)
def test_a_credential_no_one_could_verify_is_journaled_as_anonymous(
    assistant: Assistant, client: Client
):
    forged = assistant.key[:12] + "forged-by-anyone"

    with database_down():
        response = client.post(
            "/api/v1/call",
            data=json.dumps({"name": "get_order", "arguments": ORDER}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {forged}",
        )
    spool.drain()

    entry = JournalEntry.objects.get(spool_id=response.json()["journal_pending"])
    assert entry.actor.startswith("anonymous cred:")
    assert assistant.key[:12] not in entry.actor and "forged" not in entry.actor


def refused_count(channel: str, code: str) -> float:
    return ANONYMOUS_REFUSALS.labels(channel=channel, code=code)._value.get()


@pytest.mark.django_db(transaction=True)
def test_a_hundred_anonymous_refusals_in_an_outage_write_a_handful_of_spool_files(client: Client):
    before = refused_count("rest", "database_unavailable")

    with database_down():
        answers = [
            client.post(
                "/api/v1/call",
                data=json.dumps({"name": "get_order", "arguments": ORDER}),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer ibg_guess{number:04d}",
            )
            for number in range(100)
        ]

    assert {answer.status_code for answer in answers} == {503}
    assert Counter(answer.json()["journal_state"] for answer in answers) == {
        "pending": 1,
        "sampled": 99,
    }
    assert spool.pending() == 1
    assert refused_count("rest", "database_unavailable") - before == 100


def test_a_refusal_racing_its_windows_first_sample_is_journaled_itself():
    """Two refusals at once: the second must not answer `sampled` while the first's entry is
    still being written, since that write may yet be lost (seen in the chaos campaign's
    spool_full scenario: two executions refused in the same millisecond, issue 39.5)."""
    anonymous.forget()
    door = ("rest", "get_order", "database_unavailable")

    first = anonymous.admit(*door)
    racing = anonymous.admit(*door)  # the first's sample not settled yet
    anonymous.settle(*door, kept=False, skipped=first or 0)  # both kept nowhere
    anonymous.settle(*door, kept=False, skipped=racing or 0)
    after_loss = anonymous.admit(*door)
    anonymous.settle(*door, kept=True, skipped=after_loss or 0)
    after_kept = anonymous.admit(*door)

    assert (first, racing) == (0, 0)
    assert after_loss == 2  # the two lost ones, said by the next sample
    assert after_kept is None  # only now does a sample stand for the refusals after it
    anonymous.forget()


def test_a_refusal_racing_a_reopened_windows_sample_is_journaled_itself(
    settings: Any, clock: Clock
):
    """A window whose period ran out opens again with its next refusal's sample: until that
    sample is kept, a refusal racing it is journaled itself. The old window's sample stands
    for nothing after its period (the chaos campaign's pg_freeze: a refusal answered
    `sampled` while the reopened window's sample waited on a frozen database, issue 39.5)."""
    settings.GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS = 10
    anonymous.forget()
    door = ("rest", "create_order", "database_unavailable")
    opening = anonymous.admit(*door)
    anonymous.settle(*door, kept=True, skipped=opening or 0)
    clock.advance(11)

    reopening = anonymous.admit(*door)  # its sample not settled yet
    racing = anonymous.admit(*door)

    assert (opening, reopening) == (0, 0)
    assert racing == 0  # journaled itself, not `sampled` for a sample that may be lost
    anonymous.forget()


@pytest.mark.django_db(transaction=True)
def test_the_next_sample_says_how_many_refusals_it_stands_for(
    client: Client, settings: Any, clock: Clock
):
    settings.GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS = 60
    for _ in range(5):
        client.post("/api/v1/call", data="{}", content_type="application/json")
    clock.advance(61)
    client.post("/api/v1/call", data="{}", content_type="application/json")

    first, second = JournalEntry.objects.filter(code="unauthenticated").order_by("id")
    assert "ещё" not in first.message
    assert "и ещё 4 таких же отказов" in second.message


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_unauthenticated_mcp_requests_add_one_journal_row_per_period():
    app, manager = build_mcp_app()
    before = refused_count("mcp-http", "unauthenticated")
    async with (
        manager.run(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as http,
    ):
        answers = [
            await http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream"},
            )
            for _ in range(20)
        ]

    assert {answer.status_code for answer in answers} == {401}
    rows = await JournalEntry.objects.filter(channel="mcp-http", code="unauthenticated").acount()
    assert rows == 1
    assert refused_count("mcp-http", "unauthenticated") - before == 20


@pytest.mark.django_db
def test_health_is_degraded_while_the_spool_cannot_take_an_entry(client: Client, tmp_path: Path):
    assert client.get("/health").json()["checks"]["journal_spool"]["status"] == "ok"
    spool_unwritable(tmp_path)

    body = client.get("/health").json()

    assert body["status"] == "degraded"
    assert body["checks"]["journal_spool"]["writable"] is False
