"""Admin lists cost the same whatever the table's size: no DISTINCT, no COUNT over it."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from audit.admin_lists import COUNT_BOUND, BoundedPaginator
from audit.models import JournalEntry
from tools.models import Operation, PendingConfirmation

pytestmark = pytest.mark.django_db

TABLE = JournalEntry._meta.db_table


def _journal_statements(queries) -> list[str]:
    return [q["sql"] for q in queries if f'"{TABLE}"' in q["sql"]]


FILTERS = [
    {},
    {"contour__exact": "demo"},
    {"tool__exact": "get_order", "channel__exact": "rest", "status__exact": "ok"},
    {"at__gte": "2020-01-01 00:00:00+03:00", "at__lt": "2099-01-01 00:00:00+03:00"},
    {"contour__exact": "demo", "at__gte": "2020-01-01 00:00:00+03:00"},
]


@pytest.mark.parametrize("params", FILTERS)
def test_journal_changelist_reads_no_distinct_and_no_count_over_the_journal(
    admin_client, write, contour, params
):
    for n in range(3):
        write(contour="demo" if n else contour.slug, arguments={"n": n})

    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(reverse("admin:audit_journalentry_changelist"), params)

    assert page.status_code == 200
    statements = _journal_statements(queries.captured_queries)
    assert statements, "the page reads the journal"
    for sql in statements:
        assert "DISTINCT" not in sql.upper(), sql
        assert not re.search(r"COUNT\(", sql, re.I), sql
    # The sidebar still offers contours, tools and channels (from their own sources).
    body = page.content.decode()
    assert "contour__exact=acme" in body
    assert "tool__exact=create_order" in body
    assert "channel__exact=mcp-http" in body


@pytest.mark.parametrize("params", FILTERS)
def test_the_journal_page_reads_its_rows_newest_first_by_time(admin_client, write, params):
    # Ordered by -id, a page filtered by a day (or a contour and a day) was found by walking the
    # primary key back from the newest entry, row by row: 1.4 s and 4.6 s at 10 M entries
    # (issue 43, benchmarks/journal_growth.py). By -at, the at and (contour, at) indexes serve.
    write(contour="demo")

    with CaptureQueriesContext(connection) as queries:
        admin_client.get(reverse("admin:audit_journalentry_changelist"), params)

    rows = [sql for sql in _journal_statements(queries.captured_queries) if "ORDER BY" in sql]
    assert len(rows) == 1, rows
    assert f'ORDER BY "{TABLE}"."at" DESC, "{TABLE}"."id" DESC' in rows[0]


@pytest.mark.parametrize("model", [JournalEntry, Operation, PendingConfirmation])
def test_a_growing_list_is_ordered_by_an_indexed_column(model):
    # A list's first page is read off an index in its order, or every row is sorted (the
    # confirmations were: 52 ms at 100 000 rows, issue 43).
    model_admin = admin.site._registry[model]
    first = (model_admin.ordering or model._meta.ordering or ["-pk"])[0].lstrip("-")
    field = model._meta.pk if first == "pk" else model._meta.get_field(first)
    leading = {index.fields[0].lstrip("-") for index in model._meta.indexes}

    assert field.primary_key or field.db_index or field.unique or field.name in leading, first


@pytest.mark.parametrize("params", FILTERS)
def test_the_bounded_count_reads_no_column(admin_client, write, params):
    # SELECT 1, not the ids: a filter on indexed columns is counted from the index alone
    # (an index-only scan on PostgreSQL), not by fetching up to 10 001 scattered rows.
    write(contour="demo")

    with CaptureQueriesContext(connection) as queries:
        admin_client.get(reverse("admin:audit_journalentry_changelist"), params)

    counts = [
        sql
        for sql in _journal_statements(queries.captured_queries)
        if f"LIMIT {COUNT_BOUND + 1}" in sql
    ]
    assert len(counts) == 1, counts
    assert re.match(r'SELECT 1 AS "\w+" FROM', counts[0]), counts[0]


def test_the_journal_page_has_no_date_drill_down(admin_client, write):
    write()

    page = admin_client.get(reverse("admin:audit_journalentry_changelist"))

    assert page.context["cl"].date_hierarchy is None


def test_a_bounded_count_says_more_than(admin_client, write, monkeypatch):
    for _ in range(4):
        write()
    monkeypatch.setattr(BoundedPaginator, "bound", 2)

    page = admin_client.get(reverse("admin:audit_journalentry_changelist"))

    assert "больше 2: уточните фильтр" in page.content.decode()
    assert page.context["cl"].result_count == 3
    assert COUNT_BOUND == 10_000


@pytest.mark.parametrize("name", ["tools_operation", "tools_pendingconfirmation"])
def test_operations_and_confirmations_lists_count_no_table(admin_client, contour, name):
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(reverse(f"admin:{name}_changelist"))

    assert page.status_code == 200
    assert f"contour__id__exact={contour.pk}" in page.content.decode()
    table = name
    for q in queries.captured_queries:
        if f'"{table}"' in q["sql"]:
            assert "DISTINCT" not in q["sql"].upper(), q["sql"]
            assert not re.search(r"COUNT\(", q["sql"], re.I), q["sql"]
