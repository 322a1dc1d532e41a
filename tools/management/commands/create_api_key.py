"""manage.py create_api_key <slug> [--toolsets read] [--tools a,b] [--expires ISO]
[--label TEXT] [--user NAME]: prints the new key alone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from audit.actors import cli_actor
from tools.keys import scope as keys
from tools.keys import services as key_service
from tools.management import texts
from tools.models import Contour
from tools.people.factors import stepup


def parse_moment(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--expires: not an ISO 8601 date or date-time: {value!r}") from None
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


class Command(BaseCommand):
    help = (
        "Issue an API key for a contour, optionally narrower (toolsets, tools) and with an "
        "expiry. The key is shown once; only its hash is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--label", default="")
        parser.add_argument(
            "--user",
            default="",
            help="username of the person holding the key: they may not approve what it prepares",
        )
        parser.add_argument("--toolsets", default="", help="e.g. read: a read-only key")
        parser.add_argument("--tools", default="", help="comma-separated tool names")
        parser.add_argument("--expires", default="", help="ISO 8601; after it the key gets 401")

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(texts.no_contour(options["slug"]))
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(texts.no_user(options["user"]))
        expires = parse_moment(options["expires"]) if options["expires"] else None
        try:
            toolsets, tools = keys.parse_scope(options["toolsets"], options["tools"])
            _, raw = key_service.issue(
                contour,
                label=options["label"],
                user=user,
                toolsets=toolsets,
                tools=tools,
                expires_at=expires,
                channel="cli",
                actor=cli_actor(),
                step_up=stepup.from_shell(),
            )
        except keys.KeySetupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(raw)
