"""Fixtures of the core's tests: people in the role groups (a logged-in owner), a contour whose
writes need an operator and an assistant on it; issuing an order as an assistant does; signed
payment notifications posted to the webhook."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models.signals import post_save
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from invoicebox.notify import sign
from tests.conftest import Assistant, logged_in, order_args
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Contour, ContourRole, TrackedOrder


@pytest.fixture
def owner(make_user: Callable[..., User]) -> Iterator[Client]:
    """Oleg owns every contour of the test, also those its other fixtures create after him."""
    oleg = make_user("oleg", "owners", staff=True)

    def own(sender: Any, instance: Contour, created: bool, **kwargs: Any) -> None:
        if created:
            ContourRole.objects.get_or_create(user=oleg, contour=instance, role="owner")

    post_save.connect(own, sender=Contour, weak=False, dispatch_uid="test-owner")
    yield logged_in(oleg)
    post_save.disconnect(sender=Contour, dispatch_uid="test-owner")


@pytest.fixture
def guarded(db: None) -> Contour:
    """A contour that writes, every write approved by an operator."""
    contour = create_contour(
        "guarded", mode="sandbox", name="Бухгалтерия", toolsets=["read", "write"], actor=SCAFFOLDING
    )
    contour.approval_for_all_writes = True
    contour.save()
    return contour


@pytest.fixture
def guarded_assistant(guarded: Contour) -> Assistant:
    return Assistant(
        http=Client(), key=issue_key(guarded, "claude", actor=SCAFFOLDING), contour=guarded
    )


def prepare_order(assistant: Assistant, **changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first call of create_order: (its arguments, the envelope)."""
    args = order_args(**changes)
    status, body = assistant.call("create_order", args)
    assert (status, body["status"]) == (200, "confirmation_required"), body
    return args, body


def issue(assistant: Assistant, **changes: Any) -> dict[str, Any]:
    """create_order in two phases, as an assistant does; returns the created order's data."""
    args = order_args(**changes)
    status, first = assistant.call("create_order", args)
    assert status == 200 and first["status"] == "confirmation_required", first
    status, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert status == 200 and done["status"] == "ok", done
    return done["data"]


def post_notification(
    http: Client, slug: str, body: bytes, key: str | None, signature: str | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {}
    if signature is not None or key is not None:
        headers["HTTP_X_SIGNATURE"] = signature if signature is not None else sign(body, key or "")
    response = http.post(
        f"/invoicebox/notifications/{slug}", data=body, content_type="application/json", **headers
    )
    return response.status_code, response.json()


def webhook_entries() -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(channel="webhook").order_by("id"))


def tracked(order_id: str) -> TrackedOrder:
    return TrackedOrder.objects.get(order_id=order_id)


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


@pytest.fixture
def http() -> Client:
    return Client()
