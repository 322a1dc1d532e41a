"""manage.py check_contour <slug>: does the contour's token work, for which shop, can it read."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.models import Contour
from tools.services.connection import check_connection


class Command(BaseCommand):
    help = ("Check a contour's connection to Invoicebox: the token (auth), the shop it sees and "
            "one read of orders. Reads only; exits 1 when something is wrong, saying what.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(f"контура {options['slug']!r} нет")
        report = check_connection(contour)
        self.stdout.write(f"контур {contour.slug}, адрес API {report.base_url}")
        for line in report.lines():
            self.stdout.write(line)
        if not report.ok:
            raise CommandError(report.summary)
        self.stdout.write(report.summary)
