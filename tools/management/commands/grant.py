"""manage.py grant <username> owner|operator|auditor <slug> [--create] [--email E]: one role."""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools.management import texts
from tools.models import Contour, Role
from tools.people import grants as role_service
from tools.people.factors import stepup


class Command(BaseCommand):
    help = (
        "Give a user a role on a contour (journaled). Owners and auditors also get is_staff "
        "to open /admin/. --create makes the user (password from standard input with "
        "--password-stdin, else unusable: set it with changepassword)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("role", choices=Role.values)
        parser.add_argument("slug")
        parser.add_argument("--create", action="store_true", help="create the user if missing")
        parser.add_argument("--email", default="", help="where operators' alerts go")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="with --create: read the password from standard input",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        contour = Contour.objects.filter(slug=options["slug"]).first()
        if contour is None:
            raise CommandError(texts.no_contour(options["slug"]))
        model = get_user_model()
        user = model.objects.filter(username=options["username"]).first()
        if user is None:
            if not options["create"]:
                raise CommandError(texts.no_user_to_grant(options["username"]))
            user = model.objects.create_user(options["username"], email=options["email"])
            password = sys.stdin.readline() if options["password_stdin"] else ""
            if password.strip():
                user.set_password(password.strip())
            else:
                user.set_unusable_password()
            user.save()
            self.stderr.write(f"user {user.get_username()} created")
        created = role_service.grant(
            user,
            options["role"],
            contour,
            actor="manage.py",
            email=options["email"],
            step_up=stepup.from_shell(),
        )
        if options["role"] == Role.OPERATOR and not user.email:
            self.stderr.write(
                f"{user.get_username()} has no email: alerts of writes waiting "
                "for an operator won't reach them (add --email)"
            )
        self.stdout.write(
            f"{user.get_username()}: {options['role']} of {contour.slug}"
            + ("" if created else " (already)")
        )
