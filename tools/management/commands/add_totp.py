"""manage.py add_totp <username>: a TOTP device prepared for a colleague; prints its
otpauth:// URI once (the bootstrap of a first device where a second factor is required)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import cli_actor
from tools.management import texts
from tools.people.factors import devices


class Command(BaseCommand):
    help = (
        "Prepare a TOTP device for a person and print its otpauth:// URI once: hand it to "
        "them in person (it is stored nowhere else in clear and never shown on the web). "
        "The device counts after the person enters its first code on "
        "/account/second-factor/ within GATEWAY_PREPARED_DEVICE_SECONDS. Journaled, "
        "without the secret; the person is told by email."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        person = devices.person_named(options["username"])
        if person is None:
            raise CommandError(texts.no_user(options["username"]))
        device = devices.prepare_totp(person, by=cli_actor(), channel="cli")
        self.stdout.write(device.config_url)
        hours = int(settings.GATEWAY_PREPARED_DEVICE_SECONDS) // 3600
        self.stderr.write(
            f"{person.get_username()}: the device counts after its first code at "
            f"/account/second-factor/ within {hours} h (an earlier unconfirmed "
            "one was replaced)"
        )
