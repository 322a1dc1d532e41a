"""People at the wrong door are told which door is theirs: an operator at /admin/login/, an
owner at /approvals/, and the admin index links only what the person can open."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.tools.conftest import logged_in
from tools.models import Contour

pytestmark = pytest.mark.django_db


def admin_login(name: str, password: str) -> str:
    response = Client().post("/admin/login/?next=/admin/", {"username": name, "password": password})
    assert response.status_code == 200  # the form again, with its error
    return response.content.decode()


def test_an_operator_at_the_admin_login_is_sent_to_approvals(
    guarded: Contour, make_user: Callable[..., User]
) -> None:
    make_user("olga", "operators")

    page = admin_login("olga", "pw-olga-123")

    assert "эта учётная запись — оператора" in page and "/approvals/" in page
    assert "корректные" not in page  # not Django's "введите корректные имя и пароль"


def test_a_wrong_password_at_the_admin_login_says_nothing_about_roles(
    guarded: Contour, make_user: Callable[..., User]
) -> None:
    make_user("olga", "operators")

    page = admin_login("olga", "not-her-password")

    assert "корректные" in page
    assert "оператора" not in page and "Пароль верный" not in page


def test_a_person_without_a_staff_role_is_told_who_gives_one(
    make_user: Callable[..., User],
) -> None:
    make_user("nobody")

    page = admin_login("nobody", "pw-nobody-123")

    assert "нет роли владельца или аудитора" in page and "Люди контура" in page


def test_an_owner_at_approvals_is_told_the_admin_is_theirs_and_who_gives_the_operator_role(
    owner: Client, guarded: Contour
) -> None:
    response = owner.get("/approvals/")

    page = response.content.decode()
    assert response.status_code == 403
    assert "владелец контура guarded" in page and "Люди контура" in page
    assert "в группу" not in page


def test_the_admin_index_links_the_queue_only_to_operators(
    owner: Client, guarded: Contour, make_user: Callable[..., User]
) -> None:
    owner_page = owner.get("/admin/").content.decode()
    operator_owner = make_user("anna", "owners", "operators", staff=True)
    both_page = logged_in(operator_owner).get("/admin/").content.decode()

    assert "Очередь одобрения" not in owner_page
    assert "Очередь одобрения" in both_page
    assert "excel=1" in owner_page  # the journal export, Excel's variant too
