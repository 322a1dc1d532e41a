"""manage.py reset_second_factor <username>: remove a person's devices (journaled, emailed)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import cli_actor
from tools.management import texts
from tools.people.factors import devices


class Command(BaseCommand):
    help = (
        "Remove every second-factor device of a person (a lost phone and lost backup "
        "codes); journaled, and the person is told by email. Same as the admin's action, "
        "for when no superuser can reach the admin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        person = devices.person_named(options["username"])
        if person is None:
            raise CommandError(texts.no_user(options["username"]))
        removed = devices.reset(person, by=cli_actor(), channel="cli")
        self.stdout.write(texts.devices_removed(person.get_username(), removed))
