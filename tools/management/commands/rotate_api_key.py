"""manage.py rotate_api_key <prefix>: prints the new key; the old one lives on for the grace."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from tools.keys import scope as keys
from tools.keys import services as key_service
from tools.models import ApiKey
from tools.people.factors import stepup


class Command(BaseCommand):
    help = (
        "Replace an API key: the new key (same contour, scope, holder) is printed alone; "
        "the old one keeps working for the contour's grace period (key_grace_hours)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix", help="the key's visible prefix, e.g. ibg_AbCdEfGh")

    def handle(self, *args: Any, **options: Any) -> None:
        found = list(
            ApiKey.objects.active().select_related("contour").filter(prefix=options["prefix"])[:2]
        )
        if not found:
            raise CommandError(f"no active key with prefix {options['prefix']!r}")
        if len(found) > 1:
            raise CommandError(f"prefix {options['prefix']!r} is ambiguous")
        try:
            # The actor and channel this command always journaled under.
            _, raw = key_service.rotate(
                found[0], actor="manage.py", channel="admin", step_up=stepup.from_shell()
            )
        except keys.KeySetupError as error:
            raise CommandError(str(error)) from None
        old = ApiKey.objects.get(pk=found[0].pk)
        self.stderr.write(
            f"old key {old.prefix} valid until "
            f"{timezone.localtime(old.expires_at):%Y-%m-%d %H:%M %Z}"
        )
        self.stdout.write(raw)
