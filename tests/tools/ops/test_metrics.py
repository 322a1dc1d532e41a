"""GET /metrics: counts calls after they happen, reads state at scrape time, leaks no values."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from audit.actors import SCAFFOLDING
from invoicebox.limits import account_key
from invoicebox.models import CircuitState
from sandbox.api import set_faults
from tests.conftest import Assistant
from tests.tools.ops.conftest import distinctive_order, scrape, valid_inn, value
from tools.contours.services import DEMO_TOKEN
from tools.models import Ceiling, CeilingKind, PendingConfirmation

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db
def test_a_call_is_counted_after_it_happens(assistant: Assistant):
    labels = {"tool": "find_orders", "channel": "rest", "status": "ok", "code": "ok"}
    upstream = {"method": "GET", "endpoint": "/filter/api/order/order", "status": "200"}
    _, _, before = scrape()

    status, body = assistant.call("find_orders", {})
    _, _, after = scrape()

    assert status == 200, body
    assert (
        value(after, "gateway_calls_total", **labels)
        == value(before, "gateway_calls_total", **labels) + 1
    )
    core = {"tool": "find_orders", "phase": "read"}
    assert (
        value(after, "gateway_call_duration_seconds_count", **core)
        == value(before, "gateway_call_duration_seconds_count", **core) + 1
    )
    assert (
        value(after, "invoicebox_request_duration_seconds_count", **upstream)
        == value(before, "invoicebox_request_duration_seconds_count", **upstream) + 1
    )


@pytest.mark.django_db
def test_metrics_hold_no_argument_values(assistant: Assistant):
    inn, name = valid_inn(), "ООО «Квазар-Метрика»"
    unknown = {"tool": "unknown", "channel": "rest", "status": "rejected", "code": "unknown_tool"}
    _, _, before = scrape()

    prepared = assistant.call("create_order", distinctive_order(inn, name))
    looked_up = assistant.call("lookup_company_by_inn", {"inn": inn})
    assistant.call(f"leak_{inn}", {"inn": inn})
    status, text, after = scrape()

    assert prepared[1]["status"] == "confirmation_required", prepared
    assert looked_up[1]["journal_id"]
    assert status == 200
    for secret in (inn, inn[-4:] + '"', "Квазар", "leak_", assistant.key, DEMO_TOKEN):
        assert secret not in text
    assert (
        value(after, "gateway_calls_total", **unknown)
        == value(before, "gateway_calls_total", **unknown) + 1
    )


@pytest.mark.django_db
def test_upstream_errors_are_counted_by_code(assistant: Assistant):
    set_faults(DEMO_TOKEN, error_rate=1.0)
    _, _, before = scrape()

    status, body = assistant.call("find_orders", {})
    _, _, after = scrape()

    assert (status, body["code"]) == (502, "upstream_unavailable")
    # Three attempts (reads are retried), each answered by the sandbox's error envelope.
    attempts = sum(
        value(after, "invoicebox_errors_total", code=code)
        - value(before, "invoicebox_errors_total", code=code)
        for code in ("service_unavailable", "internal_error")
    )
    assert attempts == 3


@pytest.mark.django_db
def test_pending_confirmations_and_their_age_are_read_at_scrape_time(assistant: Assistant):
    first = assistant.call("create_order", distinctive_order(valid_inn(), "ООО «Один»"))[1]
    PendingConfirmation.objects.filter(pk=first["confirmation"]["id"]).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )

    _, _, samples = scrape()

    assert (
        value(samples, "gateway_pending_confirmations", contour="acme", waiting_for="assistant")
        == 1
    )
    assert (
        value(samples, "gateway_pending_confirmations", contour="acme", waiting_for="operator") == 0
    )
    assert (
        value(
            samples,
            "gateway_pending_confirmation_oldest_age_seconds",
            contour="acme",
            waiting_for="assistant",
        )
        >= 300
    )
    assert value(samples, "gateway_state_up") == 1


@pytest.mark.django_db
def test_an_open_circuit_is_gauged_per_contour(assistant: Assistant, read_only_contour):
    CircuitState.objects.create(
        account=account_key(assistant.contour.api_token),
        failures=5,
        opened_until=timezone.now() + timedelta(seconds=30),
    )
    other = read_only_contour

    _, _, samples = scrape()

    assert value(samples, "invoicebox_circuit_open", contour="acme") == 1
    # The demo token is shared: every contour on that account is cut off alike.
    assert value(samples, "invoicebox_circuit_open", contour=other.slug) == 1


@pytest.mark.django_db
def test_ceiling_ratio_counts_an_executed_order(assistant: Assistant):
    contour = assistant.contour
    Ceiling.objects.create(contour=contour, kind=CeilingKind.PER_HOUR, limit=4)
    Ceiling.objects.create(contour=contour, kind=CeilingKind.PER_DAY, currency="RUB", limit=146400)
    args = distinctive_order(valid_inn(), "ООО «Два»")
    token = assistant.call("create_order", args)[1]["confirmation"]["token"]

    status, body = assistant.call("create_order", {**args, "confirmation_token": token})
    _, _, after = scrape()

    assert status == 200, body
    assert (
        value(after, "gateway_ceiling_used_ratio", contour="acme", ceiling="per_hour", currency="")
        == 0.25
    )
    assert (
        value(
            after, "gateway_ceiling_used_ratio", contour="acme", ceiling="per_day", currency="RUB"
        )
        == 0.25
    )  # 366,00 of 1 464,00 ₽


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("remote", "headers", "token", "allowed", "expected"),
    [
        ("127.0.0.1", {}, "", None, 200),
        ("::1", {}, "", None, 200),
        ("203.0.113.9", {}, "", None, 403),
        ("203.0.113.9", {"HTTP_AUTHORIZATION": "Bearer s3cret-scrape"}, "s3cret-scrape", None, 200),
        ("203.0.113.9", {"HTTP_AUTHORIZATION": "Bearer wrong"}, "s3cret-scrape", None, 401),
        ("127.0.0.1", {"HTTP_AUTHORIZATION": "Bearer wrong"}, "s3cret-scrape", None, 401),
        ("127.0.0.1", {"HTTP_AUTHORIZATION": "Bearer anything"}, "", None, 401),
        ("10.1.2.3", {}, "", ["10.0.0.0/8"], 200),
        ("127.0.0.1", {}, "", ["10.0.0.0/8"], 403),
    ],
)
def test_metrics_need_the_token_or_an_allowed_address(
    settings, remote, headers, token, allowed, expected
):
    settings.METRICS_TOKEN = token
    if allowed is not None:
        settings.METRICS_ALLOWED_IPS = allowed

    status, text, _ = scrape(REMOTE_ADDR=remote, **headers)

    assert status == expected
    if expected != 200:
        assert "gateway_calls" not in text


@pytest.mark.django_db
def test_worker_processes_are_summed_in_multiprocess_mode(settings, tmp_path: Path):
    script = (
        "import django; django.setup()\n"
        "from audit.models import JournalEntry\n"
        "from tools.ops import metrics\n"
        "metrics.observe_call(JournalEntry(tool='get_order', channel='mcp-http', status='ok',"
        " code='ok', phase='read', duration_ms=40))\n"
    )
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    for _ in range(2):  # two processes, as two uvicorn workers would be
        subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=60,
            capture_output=True,
        )
    settings.METRICS_MULTIPROC_DIR = str(tmp_path)

    status, _, samples = scrape()

    assert status == 200
    assert (
        value(
            samples,
            "gateway_calls_total",
            tool="get_order",
            channel="mcp-http",
            status="ok",
            code="ok",
        )
        == 2
    )
    assert (
        value(samples, "gateway_call_duration_seconds_count", tool="get_order", phase="read") == 2
    )
    assert value(samples, "gateway_state_up") == 1


@pytest.mark.django_db
def test_open_mcp_sessions_are_counted_per_contour():
    from adapters.mcp import sessions
    from adapters.mcp.models import McpSession
    from tools.contours.services import create_contour
    from tools.models import ApiKey

    shop = ApiKey.issue(create_contour("shop-a", mode="sandbox", actor=SCAFFOLDING))[0]
    other = ApiKey.issue(create_contour("shop-b", mode="sandbox", actor=SCAFFOLDING))[0]
    for n in range(3):
        sessions.record(f"a-{n}", shop.pk, "2025-11-25", {})
    sessions.record("b-0", other.pk, "2025-11-25", {})
    McpSession.objects.filter(pk="a-2").update(
        last_seen=timezone.now() - timedelta(hours=1)
    )  # expired: not open

    _, _, samples = scrape()

    assert value(samples, "gateway_mcp_sessions_open", contour="shop-a") == 2
    assert value(samples, "gateway_mcp_sessions_open", contour="shop-b") == 1
