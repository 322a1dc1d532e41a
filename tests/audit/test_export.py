"""export_journal: CSV and JSON Lines content, period and contour filters, bad dates."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit import journal
from audit.export import FIELDS, entries, iter_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_days(write, monkeypatch):
    """One entry on each of 1, 2 and 3 June 2025 (noon UTC); the 2nd belongs to contour 'shop'."""
    made = []
    for day, contour in ((1, "demo"), (2, "shop"), (3, "demo")):
        moment = datetime(2025, 6, day, 12, 0, 0, 123456, tzinfo=UTC)
        monkeypatch.setattr(journal, "_now", lambda moment=moment: moment)
        made.append(
            write(
                contour=contour,
                tool="create_order",
                phase="execute",
                arguments={"amount": "150000", "customer": {"email": "ivan@example.com"}},
                message=f'день {day}, запятая, "кавычки"',
                upstream_status=200 if day != 3 else None,
            )
        )
    return made


def _export(*args: str) -> str:
    out = StringIO()
    call_command("export_journal", *args, stdout=out)
    return out.getvalue()


def test_csv_has_a_header_and_one_row_per_entry(three_days):
    rows = list(csv.reader(StringIO(_export("--format", "csv"))))

    assert rows[0] == list(FIELDS)
    assert [int(r[0]) for r in rows[1:]] == [e.id for e in three_days]
    first = dict(zip(FIELDS, rows[1], strict=True))
    assert first["at"] == "2025-06-01T12:00:00.123456+00:00"
    assert first["contour"] == "demo"
    assert first["message"] == 'день 1, запятая, "кавычки"'
    assert json.loads(first["arguments"]) == {
        "amount": "150000",
        "customer": {"email": "iv***"},
    }
    assert first["upstream_status"] == "200"
    assert first["hash"] == three_days[0].hash
    assert dict(zip(FIELDS, rows[3], strict=True))["upstream_status"] == ""


def test_jsonl_has_one_object_per_line_with_unescaped_text(three_days):
    text = _export("--format", "jsonl")
    lines = text.splitlines()

    assert len(lines) == 3
    assert "день 1" in lines[0]
    objects = [json.loads(line) for line in lines]
    assert [o["id"] for o in objects] == [e.id for e in three_days]
    assert list(objects[0]) == list(FIELDS)
    assert objects[1]["contour"] == "shop"
    assert objects[1]["arguments"]["customer"] == {"email": "iv***"}
    assert objects[2]["upstream_status"] is None
    # Chained per contour: the 3rd entry follows the 1st (both "demo"), not the "shop" one.
    assert objects[2]["prev_hash"] == three_days[0].hash
    assert [(o["chain"], o["seq"]) for o in objects] == [("demo", 1), ("shop", 1), ("demo", 2)]


def test_since_is_inclusive_and_until_exclusive(three_days):
    text = _export(
        "--format", "jsonl", "--since", "2025-06-02T12:00:00.123456+00:00", "--until", "2025-06-03"
    )

    assert [json.loads(line)["id"] for line in text.splitlines()] == [three_days[1].id]


def test_dates_without_offset_are_in_the_project_time_zone(three_days):
    # 2025-06-01T15:00:00.123456 Moscow time is 12:00:00.123456 UTC: the first entry is excluded.
    text = _export("--format", "jsonl", "--until", "2025-06-01T15:00:00.123456")

    assert text == ""


def test_contour_filter(three_days):
    demo = _export("--format", "jsonl", "--contour", "demo")
    shop_csv = list(csv.reader(StringIO(_export("--format", "csv", "--contour", "shop"))))

    assert [json.loads(line)["id"] for line in demo.splitlines()] == [
        three_days[0].id,
        three_days[2].id,
    ]
    assert [row[0] for row in shop_csv[1:]] == [str(three_days[1].id)]


def test_filters_combine(three_days):
    text = _export("--format", "csv", "--since", "2025-06-02", "--contour", "demo")

    assert [row[0] for row in list(csv.reader(StringIO(text)))[1:]] == [str(three_days[2].id)]


def test_empty_selection_gives_a_header_only(three_days):
    text = _export("--format", "csv", "--contour", "nobody")

    assert list(csv.reader(StringIO(text))) == [list(FIELDS)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since: 'yesterday' is not an ISO 8601"),
        (["--until", "2025-13-01"], "--until: '2025-13-01' is not an ISO 8601"),
        (["--since", "2025-06-03", "--until", "2025-06-01"], "earlier than --until"),
    ],
)
def test_bad_dates_are_a_command_error(args, message):
    with pytest.raises(CommandError, match=message):
        _export("--format", "csv", *args)


def test_iter_jsonl_streams_lazily(three_days):
    lines = iter_jsonl(entries(None, None, None))

    assert json.loads(next(lines))["id"] == three_days[0].id
