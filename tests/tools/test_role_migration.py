"""Upgrading from the global groups: each member keeps exactly the access they had, now as
per-contour roles, and the groups are gone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("tools", "0006_merge_currencies_and_secrets"), ("auth", "0012_alter_user_first_name_max_length")]
AFTER = [("tools", "0007_roles_alerts_key_scopes")]


@pytest.fixture
def back_to_the_latest_schema() -> Iterator[None]:
    """The test leaves the schema half-way; every later test needs all migrations applied."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_the_latest_schema")
def test_group_members_become_roles_on_the_contours_they_could_reach():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    User, Group = old.get_model("auth", "User"), old.get_model("auth", "Group")
    Contour = old.get_model("tools", "Contour")
    groups = {name: Group.objects.create(name=name)
              for name in ("owners", "operators", "auditors")}
    people = {}
    for name, group in (("oleg", "owners"), ("anna", "auditors"), ("olga", "operators"),
                        ("pavel", "operators")):
        people[name] = User.objects.create(username=name)
        people[name].groups.add(groups[group])
    common = {"mode": "sandbox", "base_url": "http://127.0.0.1:8000/sandbox/invoicebox",
              "merchant_id": "ffffffff-ffff-ffff-ffff-ffffffffffff"}
    open_to_all = Contour.objects.create(slug="open", name="open", **common)
    named = Contour.objects.create(slug="named", name="named", **common)
    named.operators.add(people["pavel"])

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    roles = {(r.user.username, r.contour.slug, r.role)
             for r in new.get_model("tools", "ContourRole").objects.select_related(
                 "user", "contour")}

    assert roles == {
        ("oleg", "open", "owner"), ("oleg", "named", "owner"),
        ("anna", "open", "auditor"), ("anna", "named", "auditor"),
        # "open" named no operators: the whole group saw it; "named" only pavel.
        ("olga", "open", "operator"), ("pavel", "open", "operator"),
        ("pavel", "named", "operator"),
    }
    assert not new.get_model("auth", "Group").objects.filter(
        name__in=["owners", "operators", "auditors"]).exists()
    assert {open_to_all.slug, named.slug} == {"open", "named"}
