"""The key lookup is compiled once per thread (tools/models/prepared.py) but reads the key's row
on every call: a change to the row, from anywhere, holds from the very next call."""

from __future__ import annotations

import threading
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, connections
from django.utils import timezone

from audit.actors import SCAFFOLDING
from tests.conftest import Assistant
from tools.keys.services import issue_key
from tools.models import ApiKey, Contour


def _fields(key: ApiKey) -> dict[str, object]:
    own = {f.attname: getattr(key, f.attname) for f in ApiKey._meta.concrete_fields}
    contour = {f.attname: getattr(key.contour, f.attname) for f in Contour._meta.concrete_fields}
    return {**own, "contour": contour}


def test_the_compiled_lookup_reads_what_the_orm_reads(contour: Contour) -> None:
    key, raw = ApiKey.issue(
        contour,
        label="narrow",
        toolsets=["read"],
        tools=["find_orders"],
        expires_at=timezone.now() + timedelta(days=1),
    )
    ApiKey.objects.filter(pk=key.pk).update(
        last_used_address="10.0.0.7", last_used_at=timezone.now()
    )

    found = ApiKey.authenticate(raw)

    assert found is not None and found._state.adding is False
    assert _fields(found) == _fields(ApiKey.objects.select_related("contour").get(pk=key.pk))
    assert found.toolsets == ["read"] and found.tools == ["find_orders"]  # JSON decoded
    assert found.database_now is not None and found.database_now.tzinfo is not None
    assert ApiKey.authenticate(raw + "x") is None
    assert ApiKey.authenticate("") is None


def test_a_key_revoked_between_two_calls_is_refused_on_the_next(assistant: Assistant) -> None:
    assert assistant.get("/api/v1/tools")[0] == 200
    ApiKey.objects.get(contour=assistant.contour).revoke()

    assert assistant.get("/api/v1/tools")[0] == 401


def test_a_key_expiring_between_two_calls_is_refused_on_the_next(assistant: Assistant) -> None:
    assert assistant.get("/api/v1/tools")[0] == 200
    ApiKey.objects.filter(contour=assistant.contour).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert assistant.get("/api/v1/tools")[0] == 401


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_change_committed_by_another_connection_holds_at_once(contour: Contour) -> None:
    raw = issue_key(contour, actor=SCAFFOLDING)
    assert ApiKey.authenticate(raw) is not None  # compiled for this thread from here on
    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=True,
    )
    with other:
        other.execute(
            "UPDATE tools_apikey SET toolsets = '[\"read\"]' WHERE contour_id = %s", [contour.pk]
        )
        narrowed = ApiKey.authenticate(raw)
        assert narrowed is not None and narrowed.toolsets == ["read"]

        other.execute(
            "UPDATE tools_apikey SET revoked_at = now() WHERE contour_id = %s", [contour.pk]
        )
        assert ApiKey.authenticate(raw) is None


@pytest.mark.django_db(transaction=True)
def test_each_thread_reads_the_row_through_its_own_connection(contour: Contour) -> None:
    raw = issue_key(contour, actor=SCAFFOLDING)
    assert ApiKey.authenticate(raw) is not None
    seen: list[object] = []

    def other_thread() -> None:
        try:
            found = ApiKey.authenticate(raw)
            seen.append(found.contour.slug if found else None)
            ApiKey.objects.filter(contour=contour).update(revoked_at=timezone.now())
            seen.append(ApiKey.authenticate(raw))
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()

    assert seen == [contour.slug, None]
    assert ApiKey.authenticate(raw) is None  # the revocation made in the other thread
