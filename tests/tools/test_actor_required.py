"""Every safety service names who acts (issue 38.6): `actor` is a required keyword, an empty one
is refused before anything changes, and only the named SCAFFOLDING skips the journal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.actors import SCAFFOLDING, required
from audit.models import JournalEntry
from tools.contours import services as contour_service
from tools.contours.services import create_contour
from tools.keys import services as key_service
from tools.models import ApiKey, Contour, ContourRole
from tools.people import grants

pytestmark = pytest.mark.django_db

EMPTY = ["", "   "]


@pytest.mark.parametrize("actor", EMPTY)
def test_required_refuses_an_actor_that_names_no_one(actor: str):
    with pytest.raises(ValueError, match="actor is required"):
        required(actor)


def test_the_shortest_call_of_each_service_is_refused_not_unjournaled():
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    calls: list[Callable[[], Any]] = [
        lambda: create_contour("other", mode="sandbox"),  # type: ignore[call-arg]
        lambda: key_service.issue_key(contour),  # type: ignore[call-arg]
        lambda: key_service.issue(contour, channel="cli"),  # type: ignore[call-arg]
    ]
    for call in calls:
        with pytest.raises(TypeError, match="actor"):
            call()


@pytest.mark.parametrize("actor", EMPTY)
def test_an_empty_actor_changes_nothing(actor: str, make_user: Callable[..., User]):
    contour = create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)
    key, _ = key_service.issue(contour, actor="user:anna", channel="admin")
    person = make_user("olga")
    before = JournalEntry.objects.count()
    refused: list[Callable[[], Any]] = [
        lambda: create_contour("other", mode="sandbox", toolsets=["read", "write"], actor=actor),
        lambda: contour_service.set_token(contour, "new-token", actor=actor, channel="cli"),
        lambda: contour_service.record_change(
            contour, contour_service.state_of(contour), actor=actor, channel="cli"
        ),
        lambda: key_service.issue_key(contour, actor=actor),
        lambda: key_service.issue(contour, actor=actor, channel="cli"),
        lambda: key_service.rotate(key, actor=actor, channel="cli"),
        lambda: key_service.revoke(key, actor=actor, channel="cli"),
        lambda: key_service.change(key, ["label"], actor=actor, channel="cli"),
        lambda: grants.grant(person, "auditor", contour, actor=actor),
        lambda: grants.revoke(person, "auditor", contour, actor=actor),
    ]
    for call in refused:
        with pytest.raises(ValueError, match="actor is required"):
            call()

    assert not Contour.objects.filter(slug="other").exists()
    assert ApiKey.objects.filter(contour=contour).count() == 1
    assert not ContourRole.objects.exists()
    assert JournalEntry.objects.count() == before


def test_scaffolding_is_not_journaled_and_a_named_actor_is():
    create_contour("scaffold", mode="sandbox", actor=SCAFFOLDING)
    contour = create_contour("named", mode="sandbox", actor="cli:root")
    key_service.issue_key(contour, actor=SCAFFOLDING)
    key_service.issue_key(contour, "by-cli", actor="cli:root")

    assert list(JournalEntry.objects.filter(contour="scaffold")) == []
    codes = list(JournalEntry.objects.filter(contour="named").values_list("code", "actor"))
    assert codes == [("contour_created", "cli:root"), ("api_key_issued", "cli:root")]
