"""manage.py journal_public_key [--all]: the public key(s) that verify signed checkpoints."""

from __future__ import annotations

import base64
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from audit import seals
from audit.models import SignedCheckpoint


class Command(BaseCommand):
    help = (
        "Print the public key (PEM) of GATEWAY_JOURNAL_SIGNING_KEY, which an auditor gives "
        "tools/verify_export.py. --all: also every older key that signed a stored "
        "checkpoint (after a rotation), each after a line naming its fingerprint."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--all",
            action="store_true",
            help="every key that signed a stored checkpoint, current first",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        current = seals.raw_public()
        if not options["all"]:
            self.stdout.write(seals.public_pem(current), ending="")
            return
        stored = SignedCheckpoint.objects.order_by().values_list("public_key", flat=True).distinct()
        others = sorted({base64.b64decode(key) for key in stored} - {current})
        for raw in [current, *others]:
            label = "current" if raw == current else "retired"
            self.stdout.write(f"# {seals.fingerprint(raw)} ({label})")
            self.stdout.write(seals.public_pem(raw), ending="")
