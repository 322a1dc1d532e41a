"""Session hygiene in the shared store: idle expiry (quick for a session that never made a
call), caps per key, contour and deployment where only the key's own idle session makes room,
a session bound to its key, a revoked key ending its sessions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from adapters.mcp import sessions
from adapters.mcp.models import McpSession
from adapters.mcp.tasks import expire_sessions
from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour
from tools.keys.services import revoke
from tools.models import ApiKey, Contour

pytestmark = pytest.mark.django_db

CLIENT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {"form": {}}},
    "clientInfo": {"name": "tests", "version": "1"},
}


@pytest.fixture
def key() -> ApiKey:
    contour = create_contour("acme", mode="sandbox", actor=SCAFFOLDING)
    return ApiKey.issue(contour)[0]


def open_session(
    key: ApiKey, session_id: str, idle_for: timedelta = timedelta(0), used: bool = True
) -> list[str]:
    closed = sessions.record(session_id, key.pk, "2025-11-25", CLIENT)
    McpSession.objects.filter(pk=session_id).update(last_seen=timezone.now() - idle_for, used=used)
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


@override_settings(MCP_MAX_SESSIONS_PER_KEY=3, MCP_SESSION_PROTECT_SECONDS=60)
def test_past_the_keys_cap_its_own_least_recently_used_idle_session_is_closed(key: ApiKey):
    # given
    open_session(key, "oldest", idle_for=timedelta(seconds=300))
    open_session(key, "middle", idle_for=timedelta(seconds=200))
    open_session(key, "recent", idle_for=timedelta(seconds=100))

    # when
    closed = open_session(key, "new")

    # then
    assert closed == ["oldest"]
    assert set(McpSession.objects.values_list("pk", flat=True)) == {"middle", "recent", "new"}


@override_settings(MCP_MAX_SESSIONS_PER_KEY=2, MCP_SESSION_PROTECT_SECONDS=300)
def test_a_key_whose_sessions_are_all_in_use_is_refused(key: ApiKey):
    # given: both used within the protected window
    open_session(key, "a", idle_for=timedelta(seconds=120))
    open_session(key, "b", idle_for=timedelta(seconds=30))

    # when
    with pytest.raises(sessions.SessionRefused) as refused:
        open_session(key, "c")

    # then
    assert (refused.value.scope, refused.value.cap) == ("key", 2)
    assert "предел 2" in str(refused.value)
    assert set(McpSession.objects.values_list("pk", flat=True)) == {"a", "b"}


@override_settings(MCP_MAX_SESSIONS=3, MCP_MAX_SESSIONS_PER_KEY=10, MCP_SESSION_PROTECT_SECONDS=60)
def test_the_deployment_ceiling_never_closes_another_tenants_session(key: ApiKey):
    # given: another contour's sessions, idle long past the protected window, fill the ceiling
    other = ApiKey.issue(create_contour("other", mode="sandbox", actor=SCAFFOLDING))[0]
    for n in range(3):
        open_session(other, f"other-{n}", idle_for=timedelta(seconds=600))

    # when
    with pytest.raises(sessions.SessionRefused) as refused:
        open_session(key, "mine")

    # then
    assert refused.value.scope == "deployment"
    assert McpSession.objects.filter(key=other).count() == 3


@override_settings(MCP_SESSION_IDLE_SECONDS=600, MCP_SESSION_UNUSED_SECONDS=60)
def test_a_session_that_never_made_a_call_expires_quickly(key: ApiKey):
    # given
    open_session(key, "probe", idle_for=timedelta(seconds=61), used=False)
    open_session(key, "handshaking", idle_for=timedelta(seconds=30), used=False)
    open_session(key, "working", idle_for=timedelta(seconds=61))

    # then
    assert sessions.resume("probe", key.pk, use=True) is None
    assert sessions.resume("working", key.pk) is not None
    assert sessions.resume("handshaking", key.pk, use=True) is not None
    assert McpSession.objects.get(pk="handshaking").used


@override_settings(
    MCP_SESSION_IDLE_SECONDS=600, MCP_SESSION_UNUSED_SECONDS=60, MCP_SESSION_EXPIRE_BATCH=2
)
def test_the_beat_deletes_expired_sessions_in_batches(key: ApiKey):
    # given
    for n in range(5):
        open_session(key, f"idle-{n}", idle_for=timedelta(seconds=700))
    open_session(key, "probe", idle_for=timedelta(seconds=90), used=False)
    open_session(key, "live", idle_for=timedelta(seconds=90))

    # when
    deleted = expire_sessions()

    # then
    assert deleted == 6
    assert list(McpSession.objects.values_list("pk", flat=True)) == ["live"]


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
