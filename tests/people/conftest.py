"""Fixtures for the people tests: users in the role groups, a contour whose writes need an
operator, and an assistant on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models.signals import post_save
from django.test import Client

from tests.conftest import Assistant, grant_everywhere, order_args
from tools.models import Contour, ContourRole
from tools.services.contours import create_contour
from tools.services.keys import issue_key


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    def _make(name: str, *groups: str, staff: bool = False, superuser: bool = False) -> User:
        user = User.objects.create_user(name, password=f"pw-{name}-123", is_staff=staff,
                                        is_superuser=superuser)
        grant_everywhere(user, *groups)
        return user

    return _make


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


def logged_in(user: User, **client_options: Any) -> Client:
    http = Client(**client_options)
    http.force_login(user)
    return http


@pytest.fixture
def guarded(db: None) -> Contour:
    """A contour that writes, every write approved by an operator."""
    contour = create_contour("guarded", mode="sandbox", name="Бухгалтерия",
                             toolsets=["read", "write"])
    contour.approval_for_all_writes = True
    contour.save()
    return contour


@pytest.fixture
def guarded_assistant(guarded: Contour) -> Assistant:
    return Assistant(http=Client(), key=issue_key(guarded, "claude"), contour=guarded)


def prepare_order(assistant: Assistant, **changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first call of create_order: (its arguments, the envelope)."""
    args = order_args(**changes)
    status, body = assistant.call("create_order", args)
    assert (status, body["status"]) == (200, "confirmation_required"), body
    return args, body
