"""The admin says when each API prefix applies, to a logged-in owner."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User

from tests.conftest import Assistant
from tests.tools.conftest import logged_in

pytestmark = pytest.mark.django_db


def test_the_admin_says_when_each_prefix_applies(
    make_user: Callable[..., User], assistant: Assistant
) -> None:
    owner = logged_in(make_user("oleg", "owners", staff=True))

    page = owner.get(f"/admin/tools/contour/{assistant.contour.pk}/change/").content.decode()

    assert 'name="api_prefix"' in page
    assert "Инвойсбокс.Бизнес" in page and "/v3/ — для магазинов Инвойсбокс" in page
