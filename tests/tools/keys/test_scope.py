"""API keys narrower than their contour, with expiry, rotation and a record of their last use.

The scope is the core's step, so every protocol refuses alike; expiry is authentication, so
every endpoint answers 401.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from audit.models import JournalEntry
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.keys import scope as keys
from tools.models import ApiKey, Contour, ContourRole, PendingConfirmation

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


@pytest.fixture
def read_key(contour: Contour) -> Assistant:
    """A read-only key on a contour whose writes are on."""
    raw = run("create_api_key", contour.slug, "--toolsets", "read", "--label", "витрина")
    return Assistant(http=Client(), key=raw, contour=contour)


def test_a_read_only_key_on_a_write_contour_is_refused_create_order(read_key: Assistant):
    status, body = read_key.call("create_order", order_args())

    assert (status, body["code"]) == (403, "forbidden")
    assert "read" in body["message"] and "create_order" in body["message"]
    assert not PendingConfirmation.objects.exists()
    assert sandbox_orders(read_key.http) == []
    [entry] = JournalEntry.objects.filter(tool="create_order")
    assert (entry.status, entry.code, entry.actor) == (
        "rejected",
        "forbidden",
        f"key:{read_key.key[:12]}",
    )


def test_every_protocol_refuses_alike(read_key: Assistant):
    openai_call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "create_order", "arguments": json.dumps(order_args())},
            }
        ],
    }
    hermes = (
        "<tool_call>\n"
        + json.dumps({"name": "create_order", "arguments": order_args()}, ensure_ascii=False)
        + "\n</tool_call>"
    )

    _, openai_reply = read_key.post("/api/v1/openai/call", openai_call)
    _, text_reply = read_key.post("/api/v1/text/call", {"text": hermes})

    assert json.loads(openai_reply[0]["content"])["code"] == "forbidden"
    assert text_reply["results"][0]["code"] == "forbidden"
    assert not PendingConfirmation.objects.exists()


def test_a_read_only_key_still_reads_and_lists_only_what_it_may_call(read_key: Assistant):
    status, tools = read_key.get("/api/v1/tools")
    listed = {tool["name"] for tool in tools["tools"]}
    found = read_key.call("find_orders", {})

    assert status == 200 and "find_orders" in listed
    assert "create_order" not in listed and "cancel_order" not in listed
    assert found[0] == 200, found


def test_a_key_limited_to_tools_refuses_the_others(contour: Contour):
    raw = run("create_api_key", contour.slug, "--toolsets", "read", "--tools", "find_orders")
    narrow = Assistant(http=Client(), key=raw, contour=contour)

    allowed = narrow.call("find_orders", {})
    refused = narrow.call("get_order", {"order_id": "00000000-0000-0000-0000-000000000001"})

    assert allowed[0] == 200
    assert (refused[0], refused[1]["code"]) == (403, "forbidden")
    assert {t["name"] for t in narrow.get("/api/v1/tools")[1]["tools"]} == {"find_orders"}


def test_a_key_is_never_wider_than_its_contour(read_only_contour: Contour):
    raw = run("create_api_key", read_only_contour.slug, "--toolsets", "read,write")
    wide = Assistant(http=Client(), key=raw, contour=read_only_contour)

    status, body = wide.call("create_order", order_args())

    assert (status, body["code"]) == (403, "forbidden")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--toolsets", "everything"], "unknown toolsets everything"),
        (["--tools", "steal_money"], "unknown tools steal_money"),
        (["--toolsets", "read", "--tools", "create_order"], "outside --toolsets"),
        (["--expires", "tomorrow"], "not an ISO 8601"),
        (["--expires", "2001-01-01T00:00:00+03:00"], "must be in the future"),
    ],
)
def test_create_api_key_refuses_what_it_cannot_honour(
    contour: Contour, options: list[str], message: str
):
    with pytest.raises(CommandError, match=message):
        run("create_api_key", contour.slug, *options)
    assert not ApiKey.objects.exists()


def test_an_expired_key_gets_401_everywhere(contour: Contour):
    soon = (timezone.now() + timedelta(hours=1)).isoformat()
    raw = run("create_api_key", contour.slug, "--expires", soon)
    assistant = Assistant(http=Client(), key=raw, contour=contour)
    assert assistant.call("find_orders", {})[0] == 200
    ApiKey.objects.filter(prefix=raw[:12]).update(expires_at=timezone.now() - timedelta(seconds=1))

    answers = [
        assistant.call("find_orders", {}),
        assistant.get("/api/v1/tools"),
        assistant.post("/api/v1/openai/call", {"role": "assistant", "tool_calls": []}),
    ]

    assert [status for status, _ in answers] == [401, 401, 401]
    assert answers[0][1]["code"] == "unauthenticated"
    assert ApiKey.authenticate(raw) is None  # the MCP endpoint and stdio ask the same


def test_the_issue_is_journaled_with_its_scope_and_never_the_key(contour: Contour):
    raw = run("create_api_key", contour.slug, "--toolsets", "read", "--tools", "find_orders")

    entry = JournalEntry.objects.get(code="api_key_issued")
    assert (entry.phase, entry.arguments["toolsets"], entry.arguments["tools"]) == (
        "configure",
        ["read"],
        ["find_orders"],
    )
    assert raw not in json.dumps(entry.arguments) + entry.message


def test_rotation_keeps_the_old_key_for_the_grace_the_owner_set(contour: Contour):
    contour.key_grace_hours = 2
    contour.save()
    old_raw = run("create_api_key", contour.slug, "--toolsets", "read", "--label", "бот")

    new_raw = run("rotate_api_key", old_raw[:12])

    old, new = ApiKey.objects.get(prefix=old_raw[:12]), ApiKey.objects.get(prefix=new_raw[:12])
    assert new_raw != old_raw and new.toolsets == ["read"] and new.label == "бот"
    assert new.expires_at is None
    assert timedelta(hours=1, minutes=59) < old.expires_at - timezone.now() <= timedelta(hours=2)
    for raw in (old_raw, new_raw):
        assert Assistant(http=Client(), key=raw, contour=contour).call("find_orders", {})[0] == 200
    rotated = JournalEntry.objects.get(code="api_key_rotated")
    assert (rotated.arguments["prefix"], rotated.arguments["replaces"]) == (
        new_raw[:12],
        old_raw[:12],
    )
    assert old_raw not in rotated.message and new_raw not in rotated.message


def test_after_the_grace_the_old_key_gets_401(contour: Contour):
    contour.key_grace_hours = 0
    contour.save()
    old_raw = run("create_api_key", contour.slug)

    new_raw = run("rotate_api_key", old_raw[:12])

    old_status = Assistant(http=Client(), key=old_raw, contour=contour).call("find_orders", {})
    assert old_status[0] == 401
    assert Assistant(http=Client(), key=new_raw, contour=contour).call("find_orders", {})[0] == 200
    with pytest.raises(CommandError, match="no active key"):
        run("rotate_api_key", old_raw[:12])


def test_the_last_use_is_recorded_and_shown_to_the_owner(contour: Contour, read_key: Assistant):
    read_key.call("find_orders", {})
    read_key.post(
        "/api/v1/openai/call",
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "find_orders", "arguments": "{}"},
                }
            ],
        },
    )
    oleg = User.objects.create_user("oleg", password="pw-oleg-123", is_staff=True)
    ContourRole.objects.create(user=oleg, contour=contour, role="owner")
    owner = Client()
    owner.force_login(oleg)

    key = ApiKey.objects.get(prefix=read_key.key[:12])
    listing = owner.get("/admin/tools/apikey/").content.decode()

    assert key.last_used_at is not None
    assert timezone.now() - key.last_used_at < timedelta(minutes=1)
    assert (key.last_used_channel, key.last_used_address) == ("openai", "127.0.0.1")
    assert "openai, 127.0.0.1" in listing and "наборы read" in listing


def test_the_last_use_is_not_rewritten_on_every_call(contour: Contour, read_key: Assistant):
    read_key.call("find_orders", {})
    first = ApiKey.objects.get(prefix=read_key.key[:12]).last_used_at

    read_key.call("find_orders", {})

    assert ApiKey.objects.get(prefix=read_key.key[:12]).last_used_at == first
    assert keys.LAST_USE_PRECISION >= timedelta(seconds=30)


def owner_of(contour: Contour) -> Client:
    oleg = User.objects.create_user("oleg", is_staff=True)
    ContourRole.objects.create(user=oleg, contour=contour, role="owner")
    http = Client()
    http.force_login(oleg)
    return http


def test_an_owner_issues_a_read_only_expiring_key_in_the_admin(contour: Contour):
    owner = owner_of(contour)
    until = (timezone.localtime() + timedelta(days=7)).strftime("%Y-%m-%d %H:%M:%S")

    page = owner.post(
        "/admin/tools/apikey/add/",
        {"contour": contour.pk, "label": "витрина", "toolsets": ["read"], "expires_at": until},
    )

    raw = page.context["raw"]
    key = ApiKey.objects.get(prefix=raw[:12])
    assert (key.toolsets, key.expires_at is not None) == (["read"], True)
    refused = Assistant(http=Client(), key=raw, contour=contour).call("create_order", order_args())
    assert refused[1]["code"] == "forbidden"
    issued = JournalEntry.objects.get(code="api_key_issued")
    assert (issued.actor, issued.channel) == ("user:oleg", "admin")


def test_an_owner_rotates_a_key_in_the_admin_and_sees_the_new_one_once(contour: Contour):
    owner = owner_of(contour)
    old_raw = run("create_api_key", contour.slug)
    old = ApiKey.objects.get(prefix=old_raw[:12])

    page = owner.post("/admin/tools/apikey/", {"action": "rotate", "_selected_action": [old.pk]})

    text = page.content.decode()
    new_raw = page.context["raw"]
    assert new_raw.startswith("ibg_") and new_raw in text and 'id="replaced-key"' in text
    assert "no-store" in page["Cache-Control"]
    old.refresh_from_db()
    assert old.expires_at is not None
    assert JournalEntry.objects.get(code="api_key_rotated").actor == "user:oleg"


def test_a_keys_own_active_rule_agrees_with_the_querysets(contour: Contour):
    """authenticate() judges the one row it read with is_active(); the admin, rotation and the
    listings filter with active(). One rule in two forms: every state must get one answer."""
    now = timezone.now()
    states = {
        "plain": {},
        "revoked": {"revoked_at": now},
        "expired": {"expires_at": now - timedelta(seconds=1)},
        "expiring": {"expires_at": now + timedelta(hours=1)},
        "revoked before expiry": {"revoked_at": now, "expires_at": now + timedelta(hours=1)},
    }
    raws = {}
    for label, fields in states.items():
        key, raw = ApiKey.issue(contour, label=label)
        ApiKey.objects.filter(pk=key.pk).update(**fields)
        raws[label] = raw

    listed = set(ApiKey.objects.filter(contour=contour).active().values_list("label", flat=True))
    judged = {key.label for key in ApiKey.objects.filter(contour=contour) if key.is_active()}
    authenticated = {label for label, raw in raws.items() if ApiKey.authenticate(raw)}

    assert listed == judged == authenticated == {"plain", "expiring"}
