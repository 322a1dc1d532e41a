"""Fixtures for the journal tests: a writer with sensible defaults and raw SQL access."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from audit.journal import record
from audit.models import JournalEntry


@pytest.fixture
def write() -> Callable[..., JournalEntry]:
    def _write(**overrides: Any) -> JournalEntry:
        fields: dict[str, Any] = {
            "contour": "demo",
            "channel": "rest",
            "actor": "gw_abc123",
            "tool": "get_order",
            "phase": "read",
            "arguments": {"order_id": "ord-1"},
            "status": "ok",
            "code": "",
            "message": "",
        }
        fields.update(overrides)
        return record(**fields)

    return _write


@pytest.fixture
def raw_sql() -> Callable[..., None]:
    """Run SQL against the journal table, bypassing the model's guards (as an attacker would)."""
    table = connection.ops.quote_name(JournalEntry._meta.db_table)

    def _run(template: str, params: list[Any]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(template.format(table=table), params)

    return _run
