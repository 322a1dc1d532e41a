"""Bounded waits on PostgreSQL (config/settings/framework.py): a call that needs a row another
connection holds is answered within lock_timeout with the envelope, not after the holder lets go."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from audit.models import JournalEntry
from tests.conftest import Assistant
from tests.tools.test_unknown_outcomes import confirmed_order

HOLD_SECONDS = 30


def hold_the_contour_row(contour_id: int, held: threading.Event, done: threading.Event) -> None:
    """Another server's transaction keeps the contour row locked until `done` (or 30 s)."""
    params = connection.get_connection_params()
    params.pop("options", None)  # the holder itself has no bounds
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params) as other:
        other.execute("SELECT id FROM tools_contour WHERE id = %s FOR UPDATE", [contour_id])
        held.set()
        done.wait(HOLD_SECONDS)
        other.rollback()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_held_contour_lock_gives_the_envelope_within_the_lock_timeout(
    assistant: Assistant, tmp_path: Any
):
    settings.GATEWAY_STATE_DIR = str(tmp_path)
    bound = connection.get_connection_params()["options"]
    assert "lock_timeout=5000" in bound and "statement_timeout=15000" in bound
    confirmed = confirmed_order(assistant, description="Строка контура занята")
    held, done = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_the_contour_row, args=(assistant.contour.pk, held, done))
    holder.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        status, answer = assistant.call("create_order", confirmed)
        waited = time.monotonic() - started
    finally:
        done.set()
        holder.join()

    assert 4 < waited < 10, waited  # lock_timeout (5 s), not the holder's 30 s
    assert (status, answer["code"]) == (503, "database_unavailable"), answer
    assert answer["journal_state"] in ("recorded", "pending")
    entry = JournalEntry.objects.get(id=answer["journal_id"]) if answer["journal_id"] else None
    assert entry is None or entry.code == "database_unavailable"
