"""manage.py set_contour_token <slug> --token-file FILE [--base-url URL]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import cli_actor
from tools.contours.connection import check_connection
from tools.contours.services import ContourSetupError, set_token
from tools.management.commands.check_contour import print_report
from tools.management.commands.create_contour import read_token_option
from tools.models import Contour
from tools.people.factors import stepup


class Command(BaseCommand):
    help = (
        "Ввести токен Инвойсбокс контура заново (и, если нужно, новый адрес API): после "
        "потери GATEWAY_SECRETS_KEY, перевыпуска токена в кабинете или смены адреса. "
        "Затем проверяет подключение."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument(
            "--token-file",
            required=True,
            help="файл с токеном API Инвойсбокс, '-' — стандартный ввод; "
            "сам токен в командной строке не передавайте",
        )
        parser.add_argument(
            "--base-url", default="", help="новый адрес API (для режимов sandbox и custom)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        token = read_token_option(options["token_file"])
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(f"контура {options['slug']!r} нет")
        try:
            set_token(
                contour,
                token,
                base_url=options["base_url"],
                actor=cli_actor(),
                channel="cli",
                step_up=stepup.from_shell(),
            )
        except ContourSetupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"контур {contour.slug}: токен {contour.masked_token} сохранён, "
            f"адрес API {contour.base_url}"
        )
        report = check_connection(contour)
        print_report(self, report)
        if not report.ok:
            raise CommandError(
                f"токен сохранён, но {report.summary[:1].lower()}{report.summary[1:]}"
            )
        self.stdout.write(report.summary)
