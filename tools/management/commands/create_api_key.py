"""manage.py create_api_key <slug> [--label TEXT] [--user NAME]: prints the new key alone."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from tools.contours import journal_key_issued
from tools.models import ApiKey, Contour


class Command(BaseCommand):
    help = "Issue an API key for a contour. The key is shown once; only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--label", default="")
        parser.add_argument(
            "--user", default="",
            help="username of the person holding the key: they may not approve what it prepares",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(f"contour {options['slug']!r} does not exist")
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"user {options['user']!r} does not exist")
        with transaction.atomic():
            key, raw = ApiKey.issue(contour, label=options["label"], user=user)
            journal_key_issued(key)
        self.stdout.write(raw)
