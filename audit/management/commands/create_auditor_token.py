"""manage.py create_auditor_token <username> [--contours a,b] [--label TEXT]: prints the token."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils.translation import gettext

from audit.access import AUDITOR, contours_of
from audit.cli import record_configure
from audit.models import AuditorToken


class Command(BaseCommand):
    help = (
        "Issue a journal-export token for an auditor, naming the contours it may read "
        "(default: every contour the user audits now). Shown once; only its hash is stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--contours", default="", help="comma-separated contour slugs, each audited by the user"
        )
        parser.add_argument("--label", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(_no_user(options["username"]))
        audited = contours_of(user, AUDITOR)
        if audited is not None and not audited:
            raise CommandError(
                f"user {user.get_username()!r} audits no contour: "
                "manage.py grant <username> auditor <slug> first"
            )
        named = [s.strip() for s in options["contours"].split(",") if s.strip()]
        if named:
            outside = sorted(set(named) - audited) if audited is not None else []
            if outside:
                raise CommandError(
                    f"user {user.get_username()!r} does not audit {', '.join(outside)}"
                )
            contours = sorted(set(named))
        elif audited is None:
            raise CommandError("a superuser's token must name its contours: --contours a,b")
        else:
            contours = sorted(audited)
        with transaction.atomic():
            token, raw = AuditorToken.issue(user, label=options["label"], contours=contours)
            record_configure(
                contour="",
                code="auditor_token_issued",
                message=f"выдан токен аудитора {token.prefix}… для {user.get_username()}: "
                + ", ".join(contours),
                arguments={
                    "object": "auditor_token",
                    "prefix": token.prefix,
                    "label": token.label,
                    "holder": user.get_username(),
                    "contours": contours,
                },
            )
        self.stdout.write(raw)


def _no_user(name: str) -> str:
    # the same words as the tools' commands (tools/management/texts.py), which audit can't import
    return gettext("user %(name)s does not exist") % {"name": repr(name)}
