"""manage.py revoke <username> owner|operator|auditor <slug>: take one role back."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.management import texts
from tools.models import Contour, Role
from tools.people import grants as role_service


class Command(BaseCommand):
    help = "Take a user's role on a contour back (journaled)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("role", choices=Role.values)
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(texts.no_contour(options["slug"]))
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(texts.no_user(options["username"]))
        removed = role_service.revoke(user, options["role"], contour, actor="manage.py")
        self.stdout.write(
            f"{user.get_username()}: {options['role']} of {contour.slug} "
            + ("revoked" if removed else "was not granted")
        )
