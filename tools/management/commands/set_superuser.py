"""manage.py set_superuser <username> [--off]: the superuser flag through the one door
(tools/people/services.py), journaled with channel cli."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.errors import ToolError
from tools.management import texts
from tools.people import services as people
from tools.people.factors import devices, stepup


class Command(BaseCommand):
    help = (
        "Make a person a superuser (every contour, every role), or with --off take it "
        "back. Journaled (person_flag_changed, channel cli); the admin's list offers the "
        "same to superusers with their fresh second factor."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--off", action="store_true", help="take the flag back")

    def handle(self, *args: Any, **options: Any) -> None:
        person = devices.person_named(options["username"])
        if person is None:
            raise CommandError(texts.no_user(options["username"]))
        value = not options["off"]
        try:
            changed = people.set_flag(
                person, "is_superuser", value, actor=None, step_up=stepup.from_shell()
            )
            if value:
                people.set_flag(person, "is_staff", True, actor=None, step_up=stepup.from_shell())
        except ToolError as error:
            raise CommandError(error.message) from None
        state = "superuser" if value else "not a superuser"
        self.stdout.write(f"{person.get_username()}: {state}" + ("" if changed else " (already)"))
