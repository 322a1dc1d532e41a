"""manage.py add_totp <username>: a TOTP device for a colleague; prints its otpauth:// URI once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import cli_actor
from tools.factors import devices


class Command(BaseCommand):
    help = ("Prepare a TOTP device for a person and print its otpauth:// URI once (give it to "
            "them; it is stored nowhere else in clear). The device counts after the person "
            "enters its first code on /account/second-factor/. Journaled, without the secret.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        person = devices.person_named(options["username"])
        if person is None:
            raise CommandError(f"user {options['username']!r} does not exist")
        device = devices.start_totp(person, name=devices.ADMIN_TOTP_NAME)
        devices.record(person, "second_factor_prepared", f"{person.get_username()}: "
                       "приложение подготовлено администратором, ждёт первого кода",
                       channel="cli", actor=cli_actor(), kind=devices.TOTP,
                       device=devices.label_of(device))
        self.stdout.write(device.config_url)
        self.stderr.write(f"{person.get_username()}: the device counts after its first code at "
                          "/account/second-factor/ (an earlier unconfirmed one was replaced)")
