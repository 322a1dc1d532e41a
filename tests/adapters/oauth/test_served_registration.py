"""Dynamic client registration is anonymous, so it is bounded: the metadata's size and
fields, registrations per address per hour, clients in all; clients nobody consented to
expire (the beat's task, and its function called directly)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.utils import timezone
from starlette.testclient import TestClient

from adapters.oauth import grants, registration, tasks
from adapters.oauth.models import OAuthClient
from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour
from tools.models import ContourRole


def metadata(**changes: Any) -> dict[str, Any]:
    return {
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/cb"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **changes,
    }


def register(served: TestClient, address: str = "10.0.0.1", **changes: Any):
    client = TestClient(served.app, base_url=str(served.base_url), client=(address, 5000))
    return client.post("/register", json=metadata(**changes))


def test_a_registration_of_256_kib_is_refused_unread(served: TestClient):
    # under the gateway's body cap (GATEWAY_MAX_BODY_BYTES), over registration's own limit
    padding = "x" * (256 * 1024)

    response = served.post(
        "/register",
        content=json.dumps(metadata(software_id=padding)),
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
    assert not OAuthClient.objects.exists()


def test_a_registration_of_two_megabytes_is_refused_by_the_body_cap(served: TestClient):
    padding = "x" * (2 * 1024 * 1024)

    response = served.post(
        "/register",
        content=json.dumps(metadata(software_id=padding)),
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"
    assert not OAuthClient.objects.exists()


def test_a_body_growing_past_the_limit_without_a_length_is_refused(served: TestClient):
    def chunks():  # valid metadata, its software_id 64 KiB long, sent without a length
        head, tail = json.dumps(metadata(software_id="")).rsplit('""', 1)
        yield (head + '"').encode()
        for _ in range(64):
            yield b"x" * 1024
        yield ('"' + tail).encode()

    response = served.post(
        "/register", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize(
    "changes",
    [
        {"client_name": "Я" * 201},
        {"redirect_uris": [f"https://claude.ai/cb{n}" for n in range(11)]},
        {"client_uri": "https://claude.ai/" + "a" * 2100},
    ],
    ids=["name", "redirect-uris", "long-uri"],
)
def test_a_field_longer_than_kept_is_refused(served: TestClient, changes: dict[str, Any]):
    response = register(served, **changes)

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_client_metadata"
    assert not OAuthClient.objects.exists()


def test_registrations_per_address_per_hour_are_bounded(served: TestClient, settings):
    settings.GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR = 3

    answers = [register(served, "10.0.0.1").status_code for _ in range(4)]
    elsewhere = register(served, "10.0.0.2")

    assert answers == [201, 201, 201, 429]
    assert elsewhere.status_code == 201
    assert OAuthClient.objects.count() == 4
    refused = register(served, "10.0.0.1")
    assert refused.json()["error"] == "too_many_registrations"
    assert refused.headers["Retry-After"] == "3600"


def test_registered_clients_in_all_are_bounded(served: TestClient, settings):
    settings.GATEWAY_OAUTH_MAX_CLIENTS = 2

    answers = [register(served, f"10.0.1.{n}").status_code for n in range(3)]

    assert answers == [201, 201, 429]
    assert register(served, "10.0.1.9").json()["error"] == "too_many_clients"


def test_a_client_nobody_consented_to_expires(served: TestClient, make_user: Callable[..., User]):
    # given: three clients a day and more old, one consented to; one registered just now
    for address in ("10.0.2.1", "10.0.2.2", "10.0.2.3"):
        assert register(served, address).status_code == 201
    old, consented, fresh = OAuthClient.objects.order_by("id")
    owner = make_user("olga")
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    ContourRole.objects.create(user=owner, contour=contour, role="owner")
    grants.consent(
        consented,
        contour,
        owner,
        ["read"],
        redirect_uri="https://claude.ai/cb",
        redirect_uri_explicit=True,
        code_challenge="x" * 43,
        resource="",
        redirect_host="claude.ai",
    )
    OAuthClient.objects.filter(pk__in=[old.pk, consented.pk]).update(
        registered_at=timezone.now() - timedelta(hours=25)
    )

    # when
    deleted = registration.expire_unused_clients()

    # then
    assert deleted == 1
    assert set(OAuthClient.objects.values_list("pk", flat=True)) == {consented.pk, fresh.pk}
    assert registration.expire_unused_clients() == 0


def test_the_beat_runs_the_expiry(served: TestClient):
    assert register(served).status_code == 201
    OAuthClient.objects.update(registered_at=timezone.now() - timedelta(hours=25))
    [entry] = [
        e
        for e in django_settings.CELERY_BEAT_SCHEDULE.values()
        if e["task"] == "adapters.oauth.tasks.expire_unused_clients"
    ]

    tasks.expire_unused_clients.delay()

    assert entry["schedule"] > 0 and not OAuthClient.objects.exists()
