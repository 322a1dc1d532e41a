"""tools.pipeline.gateway: the one entry point every door calls. Driven through gateway.call,
call_batch, reject and visible_tools on the bundled sandbox (in process): the two phases of a
write, the refusals before any upstream request, the replay of a done write, and one journal
entry per call. The clock is moved by the `clock` fixture, never slept."""

from __future__ import annotations

from typing import Any

import pytest

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from tests.conftest import Clock, order_args
from tools.contours.services import create_contour
from tools.models import (
    ApiKey,
    Ceiling,
    CeilingKind,
    Contour,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db

CHANNEL = "rest"


@pytest.fixture
def shop() -> Contour:
    contour = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    contour.confirmation_ttl_seconds = 300
    contour.save()
    return contour


@pytest.fixture
def actor(shop: Contour) -> str:
    key, _ = ApiKey.issue(shop, label="claude")
    return f"key:{key.prefix}"


def call(contour: Contour, actor: str, name: Any, arguments: Any) -> Any:
    return gateway.call(contour, name, arguments, channel=CHANNEL, actor=actor)


def test_a_write_is_prepared_then_executed_once_and_replayed_after(shop: Contour, actor: str):
    arguments = order_args(description="Бронирование, счёт 7")

    prepared = call(shop, actor, "create_order", arguments)
    assert (prepared.status, prepared.code) == ("confirmation_required", "confirmation_required")
    assert not Operation.objects.exists()  # nothing was sent upstream on the first phase
    token = prepared.confirmation["token"]

    done = call(shop, actor, "create_order", {**arguments, "confirmation_token": token})
    again = call(shop, actor, "create_order", {**arguments, "confirmation_token": token})
    repeated = call(shop, actor, "create_order", arguments)

    assert (done.status, done.replayed) == ("ok", False)
    assert (again.status, again.replayed) == ("ok", True)
    assert (repeated.status, repeated.replayed) == ("ok", True)  # inside the dedup window
    [operation] = Operation.objects.all()
    assert operation.state == OperationState.DONE
    phases = list(
        JournalEntry.objects.filter(tool="create_order")
        .order_by("id")
        .values_list("phase", flat=True)
    )
    # One entry per call, and the execution's "started" entry before its outcome.
    assert phases.count("prepare") == 2 and "execute" in phases
    assert {done.journal_id, again.journal_id, repeated.journal_id} <= set(
        JournalEntry.objects.values_list("id", flat=True)
    )


def test_a_token_past_its_ttl_executes_nothing(shop: Contour, actor: str, clock: Clock):
    arguments = order_args()
    token = call(shop, actor, "create_order", arguments).confirmation["token"]
    clock.advance(301)

    late = call(shop, actor, "create_order", {**arguments, "confirmation_token": token})

    assert late.code == "confirmation_expired"
    assert not Operation.objects.exists()


def test_a_ceiling_refuses_the_write_at_its_first_phase(shop: Contour, actor: str):
    Ceiling.objects.create(contour=shop, kind=CeilingKind.PER_ORDER, currency="RUB", limit=100_00)

    refused = call(shop, actor, "create_order", order_args())

    assert refused.code == "ceiling_exceeded"
    assert refused.data["ceiling"] == "per_order"
    assert JournalEntry.objects.get(id=refused.journal_id).code == "ceiling_exceeded"


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("no_such_tool", {}, "unknown_tool"),
        ("get_order", ["not", "an", "object"], "arguments_not_object"),
        ("get_order", {}, "invalid_arguments"),
    ],
)
def test_what_no_step_could_run_is_refused_and_journaled(
    shop: Contour, actor: str, name: str, arguments: Any, code: str
):
    refused = call(shop, actor, name, arguments)

    assert refused.code == code
    entry = JournalEntry.objects.get(id=refused.journal_id)
    assert (entry.code, entry.actor, entry.channel) == (code, actor, CHANNEL)


def test_an_unknown_tool_names_only_what_this_key_may_call(shop: Contour):
    reader, _ = ApiKey.issue(shop, label="reader", toolsets=["read"])
    actor = f"key:{reader.prefix}"

    refused = call(shop, actor, "no_such_tool", {})
    visible = [spec.name for spec in gateway.visible_tools(shop, actor=actor)]

    assert "create_order" not in visible and "get_order" in visible
    assert refused.data["known_tools"] == visible


def test_a_read_only_contour_refuses_a_write_before_any_summary(db: None):
    viewer = create_contour("viewer", mode="sandbox", actor=SCAFFOLDING)
    key, _ = ApiKey.issue(viewer)

    refused = call(viewer, f"key:{key.prefix}", "create_order", order_args())

    assert refused.code == "forbidden"
    assert "только читает" in refused.message
    assert not PendingConfirmation.objects.filter(contour=viewer).exists()


def test_identical_calls_of_one_reply_run_once(shop: Contour, actor: str):
    arguments = order_args(description="Бронирование, счёт 9")

    items = gateway.call_batch(
        shop,
        [("create_order", arguments), ("create_order", arguments), ("get_order", {})],
        channel=CHANNEL,
        actor=actor,
    )

    assert [item.duplicate_of for item in items] == [None, 0, None]
    assert items[1].outcome is items[0].outcome
    assert items[2].outcome.code == "invalid_arguments"
    assert JournalEntry.objects.filter(code="duplicate_call").count() == 1
    assert JournalEntry.objects.filter(phase="prepare", tool="create_order").count() == 1


def test_a_door_that_could_not_parse_a_call_still_journals_it(shop: Contour, actor: str):
    refused = gateway.reject(
        shop, "invalid_json", "тело запроса — не JSON", channel=CHANNEL, actor=actor
    )

    assert (refused.status, refused.code) == ("rejected", "invalid_json")
    assert JournalEntry.objects.get(id=refused.journal_id).contour == "shop"
