"""manage.py conformance_table: rewrite README's live-run table from docs/conformance/*.json."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from conformance.management.commands.conformance import TARGETS
from conformance.table import TableError, rewrite


class Command(BaseCommand):
    help = "Переписать таблицу живых прогонов в README.md по отчётам docs/conformance/."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            changed = rewrite(TARGETS)
        except TableError as error:
            raise CommandError(str(error)) from None
        self.stdout.write("README.md обновлён" if changed else "README.md уже совпадает")
