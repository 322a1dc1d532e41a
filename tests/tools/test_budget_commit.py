"""The budget's statement on a read commits without waiting for the disk (issue 44), and only
its own transaction: the journal's commit, and a caller's transaction, stay synchronous."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from invoicebox import limits
from invoicebox.models import UpstreamWindow

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite takes the budget in two statements, with no such setting")


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def test_on_its_own_the_budget_commits_asynchronously_and_the_setting_ends_with_it():
    assert synchronous_commit() == "on"
    with CaptureQueriesContext(connection) as queries:
        assert limits.admit("acct-a") is None
    statement = queries.captured_queries[0]["sql"]  # (then the old windows' DELETE)
    assert "set_config('synchronous_commit', 'off', true)" in statement
    # Committed and seen (by this and any other connection), and the connection's own
    # setting is back: the next transaction (the journal's) commits synchronously.
    assert UpstreamWindow.objects.get(account="acct-a").count == 1
    assert connection.connection.info.transaction_status == 0
    assert synchronous_commit() == "on"


def test_inside_a_callers_transaction_the_commit_is_left_alone():
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert limits.admit("acct-b") is None
        assert synchronous_commit() == "on"
    assert all("synchronous_commit', 'off'" not in q["sql"] for q in queries.captured_queries)
    assert UpstreamWindow.objects.get(account="acct-b").count == 1


def test_the_budget_still_runs_out(settings):
    settings.INVOICEBOX_RATE_LIMIT = "2/30"
    assert limits.admit("acct-c") is None
    assert limits.admit("acct-c") is None
    refusal = limits.admit("acct-c")
    assert refusal is not None and refusal.reason == "rate"
    assert UpstreamWindow.objects.get(account="acct-c").count == 2
