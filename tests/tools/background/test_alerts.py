"""Operators who are told: an email to each operator and a signed webhook per waiting item,
retried after a failure, journaled, a reminder before the deadline, and the owner's view of
what was not delivered."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from celery.exceptions import Retry
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils import timezone

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Assistant, order_args
from tools.background import alerts
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import AlertState, Contour, OperatorAlert, PendingConfirmation
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db

SECRET = "relay-shared-secret-0123456789"
RELAY_TOKEN = "bot123456:SECRET-TOKEN-IN-PATH"


@dataclass
class Relay:
    """A webhook receiver on 127.0.0.1 that checks the signature as a relay would."""

    url: str = ""
    answers: list[int] = field(default_factory=list)  # status per request; then 200
    received: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def relay() -> Iterator[Relay]:
    state = Relay()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            state.received.append(
                {
                    "signature_ok": hmac.compare_digest(
                        expected, self.headers.get("X-Gateway-Signature", "")
                    ),
                    "body": json.loads(body),
                    "raw": body.decode(),
                    "path": self.path,
                }
            )
            status = state.answers.pop(0) if state.answers else 200
            self.send_response(status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_port}/{RELAY_TOKEN}/send"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def shop(relay: Relay) -> Contour:
    contour = create_contour(
        "shop", mode="sandbox", name="Лавка", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.alert_webhook_url = relay.url
    contour.alert_webhook_secret = SECRET
    contour.save()
    return contour


@pytest.fixture
def people(shop: Contour) -> dict[str, User]:
    found = {}
    for name, role in (("olga", "operator"), ("pavel", "operator"), ("oleg", "owner")):
        found[name] = User.objects.create_user(name, email=f"{name}@shop.example")
        role_service.grant(found[name], role, shop, actor="test")
    return found


@pytest.fixture
def prepare(
    shop: Contour, django_capture_on_commit_callbacks: Callable[..., Any]
) -> Callable[[], dict[str, Any]]:
    assistant = Assistant(http=Client(), key=issue_key(shop, actor=SCAFFOLDING), contour=shop)
    args = order_args()

    def _prepare() -> dict[str, Any]:
        with django_capture_on_commit_callbacks(execute=True):
            status, body = assistant.call("create_order", args)
        assert (status, body["status"]) == (200, "confirmation_required"), body
        return body

    return _prepare


def alert_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(phase="notify").order_by("id"))


def test_each_operator_gets_an_email_and_the_relay_a_signed_body(
    people: dict[str, User], relay: Relay, prepare: Callable[[], dict[str, Any]], shop: Contour
):
    body = prepare()
    cid = body["confirmation"]["id"]

    recipients = sorted(message.to[0] for message in mail.outbox)
    assert recipients == ["olga@shop.example", "pavel@shop.example"]  # operators, not oleg
    email = mail.outbox[0]
    assert email.subject.startswith("Ждёт одобрения: ") and "366,00 ₽" in email.subject
    assert f"/approvals/{cid}/" in email.body and "Решить до:" in email.body
    # No customer data in mail either: the approval page shows it, signed in.
    assert "Ромашка" not in email.body + email.subject and "7710044140" not in email.body
    [hook] = relay.received
    assert hook["signature_ok"]
    assert hook["body"]["event"] == "confirmation.waiting"
    assert (hook["body"]["confirmation_id"], hook["body"]["amount"]) == (cid, "36600")
    assert hook["body"]["approval_url"].endswith(f"/approvals/{cid}/")
    # Nothing secret and no customer data leaves in the webhook.
    for private in (shop.api_token, SECRET, "Ромашка", "7710044140", "buh@romashka.example"):
        assert private not in hook["raw"]
    # Never a secret or the customer's contacts in the email.
    for private in (shop.api_token, SECRET, "buh@romashka.example", RELAY_TOKEN):
        assert all(private not in m.body + m.subject for m in mail.outbox)
    entries = alert_entries()
    assert [(e.code, e.channel, e.confirmation_id) for e in entries] == [
        ("alert_sent", "celery", cid)
    ] * 3
    assert {e.arguments["recipient"] for e in entries} == {"olga", "pavel", "webhook"}
    for entry in entries:  # the relay URL carries its token: never in the journal
        assert RELAY_TOKEN not in json.dumps(entry.arguments) + entry.message


def test_the_same_waiting_item_alerts_nobody_twice(
    people: dict[str, User], relay: Relay, prepare: Callable[[], dict[str, Any]]
):
    first, second = prepare(), prepare()

    assert first["confirmation"]["id"] == second["confirmation"]["id"]
    assert len(mail.outbox) == 2 and len(relay.received) == 1


def test_a_failed_webhook_is_retried_with_backoff_and_journaled(
    people: dict[str, User],
    relay: Relay,
    prepare: Callable[[], dict[str, Any]],
    django_capture_on_commit_callbacks: Callable[..., Any],
):
    relay.answers = [503]
    prepare()
    hook = OperatorAlert.objects.get(transport="webhook")
    owner = Client()
    owner.force_login(people["oleg"])
    undelivered = owner.get("/dashboard/").content.decode()

    assert (hook.state, hook.attempts) == (AlertState.PENDING, 1)
    assert "HTTP 503" in hook.last_error
    assert timedelta(seconds=25) < hook.next_attempt_at - timezone.now() <= timedelta(seconds=30)
    assert f'data-alert="{hook.pk}"' in undelivered and "HTTP 503" in undelivered
    assert alerts.sweep_alerts() == 0  # not due yet: nothing sent early

    OperatorAlert.objects.filter(pk=hook.pk).update(next_attempt_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        alerts.sweep_alerts()

    hook.refresh_from_db()
    assert (hook.state, hook.attempts) == (AlertState.SENT, 2)
    assert [r["signature_ok"] for r in relay.received] == [True, True]
    webhook_entries = [e for e in alert_entries() if e.arguments["recipient"] == "webhook"]
    assert [(e.status, e.code, e.arguments["attempt"]) for e in webhook_entries] == [
        ("error", "alert_retry", 1),
        ("ok", "alert_sent", 2),
    ]
    assert f'data-alert="{hook.pk}"' not in owner.get("/dashboard/").content.decode()


def test_a_refusing_relay_is_not_retried_and_the_owner_sees_it(
    people: dict[str, User], relay: Relay, prepare: Callable[[], dict[str, Any]]
):
    relay.answers = [404]
    prepare()

    hook = OperatorAlert.objects.get(transport="webhook")
    assert (hook.state, hook.attempts) == (AlertState.FAILED, 1)
    assert alerts.sweep_alerts() == 0
    assert len(relay.received) == 1
    assert [e.code for e in alert_entries() if e.arguments["recipient"] == "webhook"] == [
        "alert_failed"
    ]


def test_an_operator_without_an_address_is_an_undelivered_alert(
    people: dict[str, User], prepare: Callable[[], dict[str, Any]]
):
    people["pavel"].email = ""
    people["pavel"].save()

    prepare()

    failed = OperatorAlert.objects.get(recipient=str(people["pavel"].pk))
    assert failed.state == AlertState.FAILED and "адрес почты" in failed.last_error
    assert [m.to for m in mail.outbox] == [["olga@shop.example"]]


def test_a_reminder_goes_out_before_the_deadline_once(
    people: dict[str, User],
    relay: Relay,
    prepare: Callable[[], dict[str, Any]],
    django_capture_on_commit_callbacks: Callable[..., Any],
    settings: Any,
):
    settings.GATEWAY_ALERT_REMINDER_SECONDS = 300
    cid = prepare()["confirmation"]["id"]
    mail.outbox.clear()
    assert alerts.sweep_alerts() == 0  # 15 minutes left: too early

    PendingConfirmation.objects.filter(pk=cid).update(
        expires_at=timezone.now() + timedelta(minutes=4)
    )
    with django_capture_on_commit_callbacks(execute=True):
        alerts.sweep_alerts()
    with django_capture_on_commit_callbacks(execute=True):
        alerts.sweep_alerts()

    assert sorted(m.to[0] for m in mail.outbox) == ["olga@shop.example", "pavel@shop.example"]
    assert all(m.subject.startswith("Напоминание: ") for m in mail.outbox)
    assert relay.received[-1]["body"]["event"] == "confirmation.reminder"
    assert len(relay.received) == 2


def test_a_decided_item_sends_nothing_more(
    people: dict[str, User],
    relay: Relay,
    prepare: Callable[[], dict[str, Any]],
    django_capture_on_commit_callbacks: Callable[..., Any],
):
    relay.answers = [500]
    cid = prepare()["confirmation"]["id"]
    PendingConfirmation.objects.filter(pk=cid).update(status="rejected")
    OperatorAlert.objects.filter(transport="webhook").update(next_attempt_at=timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        alerts.sweep_alerts()

    assert OperatorAlert.objects.get(transport="webhook").state == AlertState.SKIPPED
    assert len(relay.received) == 1


def test_a_worker_schedules_the_retry_with_the_backoff(
    people: dict[str, User], relay: Relay, shop: Contour
):
    relay.answers = [503]
    assistant = Assistant(http=Client(), key=issue_key(shop, actor=SCAFFOLDING), contour=shop)
    confirmation_id = assistant.call("create_order", order_args())[1]["confirmation"]["id"]
    # Queued only (the test's transaction never commits): delivered below as a worker would.
    alerts.queue_alerts(confirmation_id, "waiting")
    hook = OperatorAlert.objects.get(transport="webhook")
    task = alerts.deliver_alert
    task.push_request(
        is_eager=False, retries=0, id="a-1", called_directly=False, args=[hook.pk], kwargs={}
    )
    try:
        with pytest.raises(Retry) as retry:
            task.run(hook.pk)
    finally:
        task.pop_request()

    assert retry.value.when == 30  # the first backoff step
    hook.refresh_from_db()
    assert (hook.state, hook.attempts) == (AlertState.PENDING, 1)


@pytest.mark.parametrize(
    ("url", "production", "refused"),
    [
        ("https://relay.example.org/hook", True, False),
        ("http://relay.example.org/hook", True, True),
        ("https://127.0.0.1/hook", True, True),
        ("https://10.0.0.5/hook", True, True),
        ("https://169.254.169.254/latest", True, True),
        ("https://localhost/hook", True, True),
        ("http://127.0.0.1:9000/hook", False, False),
        ("ftp://relay.example.org/", False, True),
    ],
)
def test_the_webhook_may_not_point_inside_in_production(
    url: str, production: bool, refused: bool, settings: Any
):
    settings.PRODUCTION = production

    assert bool(alerts.webhook_url_problem(url)) is refused


def test_a_broker_down_never_fails_the_call_and_the_sweep_tells_later(
    people: dict[str, User],
    relay: Relay,
    shop: Contour,
    django_capture_on_commit_callbacks: Callable[..., Any],
):
    assistant = Assistant(http=Client(), key=issue_key(shop, actor=SCAFFOLDING), contour=shop)

    def broker_down(*args: Any) -> None:
        raise ConnectionError("broker unreachable")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(alerts.queue_alerts, "delay", broker_down)
        with django_capture_on_commit_callbacks(execute=True):
            status, body = assistant.call("create_order", order_args())
    assert (status, body["status"]) == (200, "confirmation_required")
    assert not OperatorAlert.objects.exists() and mail.outbox == []

    PendingConfirmation.objects.update(created_at=timezone.now() - timedelta(minutes=3))
    with django_capture_on_commit_callbacks(execute=True):
        alerts.sweep_alerts()

    assert len(mail.outbox) == 2 and len(relay.received) == 1
