"""create_api_key --user: the key is linked to the person who holds it."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from tools.models import ApiKey, Contour

pytestmark = pytest.mark.django_db


def test_create_api_key_links_the_key_to_a_user(contour: Contour, make_user: Callable[..., User]):
    olga = make_user("olga")
    out = io.StringIO()

    call_command("create_api_key", contour.slug, "--label", "olga's", "--user", "olga", stdout=out)

    key = ApiKey.authenticate(out.getvalue().strip())
    assert key is not None and key.user == olga


def test_create_api_key_refuses_an_unknown_user(contour: Contour):
    with pytest.raises(CommandError, match="пользователя 'nobody' нет"):
        call_command("create_api_key", contour.slug, "--user", "nobody", stdout=io.StringIO())
    assert ApiKey.objects.count() == 0
