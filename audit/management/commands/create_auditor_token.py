"""manage.py create_auditor_token <username> [--label TEXT]: prints the new token alone."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from audit.access import AUDITORS_GROUP, is_auditor
from audit.cli import record_configure
from audit.models import AuditorToken


class Command(BaseCommand):
    help = ("Issue a journal-export token for an auditor (a user in the auditors group). "
            "It is shown once; only its hash is stored.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--label", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"user {options['username']!r} does not exist")
        if not is_auditor(user):
            raise CommandError(f"user {user.get_username()!r} is not active in the "
                               f"{AUDITORS_GROUP} group: add them first (manage.py setup_roles)")
        with transaction.atomic():
            token, raw = AuditorToken.issue(user, label=options["label"])
            record_configure(
                contour="", code="auditor_token_issued",
                message=f"выдан токен аудитора {token.prefix}… для {user.get_username()}",
                arguments={"object": "auditor_token", "prefix": token.prefix,
                           "label": token.label, "holder": user.get_username()},
            )
        self.stdout.write(raw)
