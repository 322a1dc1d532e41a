"""manage.py check_contour <slug>: does the contour's token work, for which shop, can it read."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.contours.connection import ConnectionReport, check_connection
from tools.models import Contour


def print_report(command: BaseCommand, report: ConnectionReport) -> None:
    command.stdout.write(f"контур {report.contour}, адрес API {report.base_url}")
    command.stdout.write(f"кто отвечает: {report.answered_by}")
    for line in report.lines():
        command.stdout.write(line)


class Command(BaseCommand):
    help = (
        "Проверить подключение контура к Инвойсбокс: токен, магазин, который он видит, и "
        "одно чтение счетов. Только чтение; код выхода 1 и причина, если что-то не так."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(f"контура {options['slug']!r} нет")
        report = check_connection(contour)
        print_report(self, report)
        if not report.ok:
            raise CommandError(report.summary)
        self.stdout.write(report.summary)
