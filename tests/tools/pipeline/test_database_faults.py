"""The database as a fault, through Django's query hook (connection.execute_wrapper): a call
still gets an envelope and its journal entry is spooled, and a create whose tracking was cut is
unknown until the recovery finds it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client

from audit import spool
from audit.models import JournalEntry
from audit.walk import verify_chain
from tests.conftest import Assistant, sandbox_orders
from tests.tools.test_unknown_outcomes import age_operations, confirmed_order
from tools.models import Operation, TrackedOrder
from tools.pipeline import sweep


@pytest.fixture(autouse=True)
def _spool_and_timeout(settings: Any, tmp_path: Path) -> None:
    settings.INVOICEBOX_TIMEOUT_SECONDS = 0.3
    settings.GATEWAY_STATE_DIR = str(tmp_path)


@contextmanager
def database_down(when: Callable[[str], bool] = lambda sql: True) -> Iterator[None]:
    """Every query that `when` picks fails as with a cut connection."""

    def refuse(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if when(sql):
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        yield


# Without the test's own transaction: a server has none around a call, and the spool is only
# for entries no caller's transaction depends on.
@pytest.mark.django_db(transaction=True)
def test_a_database_down_is_an_envelope_and_its_entry_reaches_the_journal_later(
    assistant: Assistant,
):
    with database_down():
        status, answer = assistant.call("get_order", {"order_id": "x" * 36})

    assert status == 503, answer
    assert answer["code"] == "database_unavailable"
    assert answer["journal_id"] is None and answer["journal_pending"]
    assert spool.pending() == 1
    # The database is back: the next journaled call drains the spool first.
    assistant.call("find_orders", {"page_size": 1})
    entry = JournalEntry.objects.get(spool_id=answer["journal_pending"])
    assert (entry.code, entry.channel) == ("database_unavailable", "rest")
    assert spool.pending() == 0
    assert verify_chain() is None


@pytest.mark.django_db(transaction=True)
def test_the_database_lost_after_the_upstream_create_is_unknown_then_recovered(
    assistant: Assistant, client: Client
):
    confirmed = confirmed_order(assistant, description="База пропала после создания")
    cut_at: list[str] = []

    def from_the_tracking_on(sql: str) -> bool:
        """Down from the first write after the upstream create (tracking the order) on."""
        if "tools_trackedorder" in sql:
            cut_at.append(sql)
        return bool(cut_at)

    with database_down(from_the_tracking_on):
        status, cut = assistant.call("create_order", confirmed)

    assert (status, cut["code"]) == (504, "outcome_unknown"), cut
    assert cut["journal_pending"]
    [order] = sandbox_orders(client)
    assert Operation.objects.get().state == "in_flight"
    age_operations()
    assert sweep.resolve_operations() == {"found": 1}
    assert TrackedOrder.objects.get().order_id == order["id"]
    spool.drain()
    assert JournalEntry.objects.filter(spool_id=cut["journal_pending"]).exists()
