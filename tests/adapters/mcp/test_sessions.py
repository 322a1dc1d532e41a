"""Session hygiene in the shared store: idle expiry, the cap closing the oldest idle session
first, a session bound to its key, a revoked key ending its sessions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from adapters.mcp import sessions
from adapters.mcp.models import McpSession
from tools.models import ApiKey, Contour
from tools.services.contours import create_contour
from tools.services.keys import revoke

pytestmark = pytest.mark.django_db

CLIENT = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
          "clientInfo": {"name": "tests", "version": "1"}}


@pytest.fixture
def key() -> ApiKey:
    contour = create_contour("acme", mode="sandbox")
    return ApiKey.issue(contour)[0]


def open_session(key: ApiKey, session_id: str, idle_for: timedelta = timedelta(0)) -> list[str]:
    closed = sessions.record(session_id, key.pk, "2025-11-25", CLIENT)
    McpSession.objects.filter(pk=session_id).update(last_seen=timezone.now() - idle_for)
    return closed


def test_a_session_is_resumed_with_what_it_negotiated(key: ApiKey):
    # given
    open_session(key, "s1")

    # when
    facts = sessions.resume("s1", key.pk)

    # then
    assert facts is not None
    assert (facts.protocol_version, facts.client_params) == ("2025-11-25", CLIENT)


def test_another_key_does_not_find_it(key: ApiKey):
    # given
    open_session(key, "s1")
    other = ApiKey.issue(Contour.objects.get(slug="acme"), label="second")[0]

    # then
    assert sessions.resume("s1", other.pk) is None
    assert sessions.resume("s1", key.pk) is not None


@override_settings(MCP_SESSION_IDLE_SECONDS=600)
def test_an_idle_session_expires(key: ApiKey):
    # given
    open_session(key, "fresh", idle_for=timedelta(seconds=590))
    open_session(key, "idle", idle_for=timedelta(seconds=610))

    # then
    assert sessions.resume("fresh", key.pk) is not None
    assert sessions.resume("idle", key.pk) is None


@override_settings(MCP_SESSION_IDLE_SECONDS=600)
def test_a_used_session_is_kept_alive(key: ApiKey):
    # given: idle for longer than the touch interval, shorter than the expiry
    open_session(key, "s1", idle_for=timedelta(seconds=120))

    # when
    sessions.resume("s1", key.pk)

    # then
    seen = McpSession.objects.get(pk="s1").last_seen
    assert timezone.now() - seen < timedelta(seconds=5)


@override_settings(MCP_MAX_SESSIONS=3)
def test_past_the_cap_the_oldest_idle_session_is_closed(key: ApiKey):
    # given
    open_session(key, "oldest", idle_for=timedelta(seconds=300))
    open_session(key, "middle", idle_for=timedelta(seconds=200))
    open_session(key, "recent", idle_for=timedelta(seconds=100))

    # when
    closed = open_session(key, "new")

    # then
    assert closed == ["oldest"]
    assert set(McpSession.objects.values_list("pk", flat=True)) == {"middle", "recent", "new"}


@override_settings(MCP_SESSION_IDLE_SECONDS=600)
def test_opening_a_session_clears_the_expired_ones(key: ApiKey):
    # given
    open_session(key, "expired", idle_for=timedelta(seconds=700))

    # when
    closed = open_session(key, "new")

    # then
    assert closed == ["expired"]


def test_a_revoked_key_ends_its_session(key: ApiKey):
    # given
    open_session(key, "s1")
    assert not sessions.end_if_key_inactive("s1")  # the key is fine: nothing ends

    # when
    revoke(key, actor="owner", channel="admin")

    # then
    assert sessions.end_if_key_inactive("s1")
    assert not McpSession.objects.filter(pk="s1").exists()


def test_a_deleted_key_takes_its_sessions_along(key: ApiKey):
    # given
    open_session(key, "s1")

    # when
    key.delete()

    # then
    assert not McpSession.objects.exists()
