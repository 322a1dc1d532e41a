"""manage.py setup_roles: the groups owners, operators and auditors with their permissions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand

from audit.access import AUDITORS_GROUP

# (app label, model, actions). App labels as strings: the audit app imports nothing of tools.
ROLES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "owners": [
        ("tools", "contour", ("add", "change", "view")),
        ("tools", "ceiling", ("add", "change", "delete", "view")),
        ("tools", "apikey", ("add", "change", "view")),
        ("tools", "pendingconfirmation", ("view",)),
        ("tools", "operation", ("view",)),
        ("audit", "journalentry", ("view",)),
    ],
    # Operators work in /approvals/; the group itself is their role.
    "operators": [("tools", "pendingconfirmation", ("view",))],
    AUDITORS_GROUP: [
        ("audit", "journalentry", ("view",)),
        ("audit", "auditortoken", ("view",)),
    ],
}


class Command(BaseCommand):
    help = ("Create or update the role groups (idempotent). Owners and auditors also need "
            "is_staff to open /admin/; operators only log in at /approvals/.")

    def handle(self, *args: Any, **options: Any) -> None:
        for name, grants in ROLES.items():
            group, _ = Group.objects.get_or_create(name=name)
            codenames = [(app, f"{action}_{model}") for app, model, actions in grants
                         for action in actions]
            permissions = [Permission.objects.get(content_type__app_label=app, codename=code)
                           for app, code in codenames]
            group.permissions.set(permissions)
            self.stdout.write(f"{name}: {len(permissions)} permissions")
