"""GET /health: 200 only while the database answers; it names no contour and no secret."""

from __future__ import annotations

import copy
import dataclasses
import json
import socket
import time
from collections.abc import Iterator
from datetime import timedelta
from importlib import metadata
from pathlib import Path

import pytest
from django.db import connections
from django.test import Client
from django.utils import timezone

from audit.actors import SCAFFOLDING
from invoicebox.limits import account_key
from invoicebox.models import CircuitState
from tests.tools.ops.conftest import closed_port
from tools import catalog
from tools.contours.services import DEMO_MERCHANT_ID, DEMO_TOKEN, create_contour
from tools.ops import health


def get_health() -> tuple[int, dict, str]:
    response = Client().get("/health")
    return response.status_code, response.json(), response.content.decode()


@pytest.fixture
def broken_database(tmp_path: Path) -> Iterator[None]:
    """The default connection pointed at a database that does not answer: a closed port for
    PostgreSQL, a file in a missing directory for SQLite. The driver really fails to connect."""
    original = connections["default"]
    settings_dict = copy.deepcopy(original.settings_dict)
    if original.vendor == "postgresql":
        settings_dict.update(HOST="127.0.0.1", PORT=str(closed_port()))
    else:
        settings_dict["NAME"] = str(tmp_path / "missing" / "db.sqlite3")
    connections["default"] = type(original)(settings_dict, "default")
    try:
        yield
    finally:
        connections["default"].close()
        connections["default"] = original


@pytest.mark.django_db
def test_healthy_gateway_reports_version_fingerprint_and_checks():
    create_contour("secret-shop", mode="sandbox", name="Тайный магазин", actor=SCAFFOLDING)

    status, body, text = get_health()

    assert status == 200
    assert body["status"] == "ok"
    assert body["version"] == metadata.version("invoicebox-gateway")
    assert body["catalog"] == {
        "fingerprint": health.catalog_fingerprint(),
        "tools": len(catalog.CATALOG),
    }
    assert len(body["catalog"]["fingerprint"]) == 64
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"] == {"status": "not_configured"}
    assert body["checks"]["upstream"] == {
        "status": "ok",
        "contours": 1,
        "circuits": {"closed": 1, "open": 0, "half_open": 0},
    }
    for secret in ("secret-shop", "Тайный", DEMO_TOKEN, DEMO_MERCHANT_ID, account_key(DEMO_TOKEN)):
        assert secret not in text


@pytest.mark.django_db
def test_health_is_503_when_the_database_does_not_answer(broken_database: None):
    status, body, text = get_health()

    assert status == 503
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == {"status": "unavailable", "error": "OperationalError"}
    assert body["checks"]["upstream"]["status"] == "unknown"
    # The catalog is known without the database: an operator can still tell what is deployed.
    assert body["catalog"]["fingerprint"] == health.catalog_fingerprint()
    assert "missing" not in text and "127.0.0.1" not in text


@pytest.mark.django_db
def test_open_circuit_degrades_health_without_naming_the_contour(contour, read_only_contour):
    CircuitState.objects.create(
        account=account_key(DEMO_TOKEN),
        failures=5,
        opened_until=timezone.now() + timedelta(seconds=30),
    )
    own = create_contour(
        "own-account",
        mode="sandbox",
        token="f" * 32,
        merchant_id="ffffffff-ffff-ffff-ffff-fffffffffff1",
        actor=SCAFFOLDING,
    )
    CircuitState.objects.create(
        account=account_key(own.api_token),
        failures=5,
        opened_until=timezone.now() - timedelta(seconds=1),
    )

    status, body, text = get_health()

    assert status == 200
    assert body["status"] == "degraded"
    assert body["checks"]["upstream"] == {
        "status": "degraded",
        "contours": 3,
        "circuits": {"closed": 0, "open": 2, "half_open": 1},
    }
    for secret in ("acme", "viewer", "own-account", account_key(DEMO_TOKEN), "f" * 32):
        assert secret not in text


@pytest.mark.django_db
def test_unreachable_broker_degrades_health_and_hides_its_url(settings):
    settings.CELERY_BROKER_URL = f"redis://:hunter2@127.0.0.1:{closed_port()}/0"
    started = time.monotonic()

    status, body, text = get_health()

    assert time.monotonic() - started < 5
    assert status == 200
    assert body["status"] == "degraded"
    assert body["checks"]["broker"]["status"] == "unavailable"
    assert "hunter2" not in text and "redis" not in text


def _redis_listening() -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", 6379)) == 0


@pytest.mark.django_db
@pytest.mark.skipif(not _redis_listening(), reason="no Redis on 127.0.0.1:6379")
def test_reachable_broker_is_ok(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/15"

    status, body, _ = get_health()

    assert (status, body["checks"]["broker"]["status"]) == (200, "ok")


def test_fingerprint_is_stable_and_follows_every_definition(monkeypatch):
    first = catalog.CATALOG[0]
    original = health.catalog_fingerprint()
    reworded = (
        dataclasses.replace(first, description_ru=first.description_ru + " "),
        *catalog.CATALOG[1:],
    )
    reordered = (*catalog.CATALOG[1:], first)

    assert health.fingerprint_of(tuple(catalog.CATALOG)) == original
    assert health.fingerprint_of(reworded) != original
    assert health.fingerprint_of(reordered) != original
    monkeypatch.setattr(catalog, "CATALOG", reworded)
    assert health.catalog_fingerprint() == health.fingerprint_of(reworded)
    monkeypatch.undo()
    assert health.catalog_fingerprint() == original
    definitions = json.dumps(health.catalog_definitions(catalog.CATALOG), ensure_ascii=False)
    assert '"input_schema"' in definitions and first.name in definitions


@pytest.mark.django_db
def test_health_answers_get_only():
    assert Client().post("/health").status_code == 405


@pytest.mark.django_db
def test_health_is_three_statements_on_the_requests_own_connection():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    with CaptureQueriesContext(connection) as queries:
        status, _body, _ = get_health()

    assert status == 200
    # SELECT 1, the contours, their circuits: no second connection, no per-contour query.
    assert len(queries.captured_queries) == 3


@pytest.mark.django_db
def test_a_kept_broker_answer_says_how_old_it_is(settings, monkeypatch):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    probes: list[str] = []
    real_probe = health._probe_broker
    monkeypatch.setattr(health, "_probe_broker", lambda url: probes.append(url) or real_probe(url))

    first = get_health()[1]["checks"]["broker"]
    second = get_health()[1]["checks"]["broker"]

    assert first["status"] == second["status"] == "unavailable"
    assert "age_s" not in first and second["age_s"] >= 0
    assert len(probes) == 1
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/1"  # a new URL: probed anew
    assert "age_s" not in get_health()[1]["checks"]["broker"]
    assert len(probes) == 2
