"""manage.py create_api_key <slug> [--label TEXT]: prints the new key alone on stdout."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.contours import issue_key
from tools.models import Contour


class Command(BaseCommand):
    help = "Issue an API key for a contour. The key is shown once; only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--label", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(f"contour {options['slug']!r} does not exist")
        self.stdout.write(issue_key(contour, options["label"]))
