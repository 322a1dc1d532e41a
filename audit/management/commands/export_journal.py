"""manage.py export_journal: stream the journal to stdout as CSV or JSON Lines."""

from __future__ import annotations

import os
import sys
from argparse import ArgumentParser
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from audit import seals
from audit.export import batched, entries, iter_csv, iter_jsonl
from audit.models import Status
from audit.signed_export import checkpoints, iter_signed_jsonl


def _parse_moment(option: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(
            f"{option}: {value!r} is not an ISO 8601 date or date-time "
            "(e.g. 2025-01-31 or 2025-01-31T12:00:00+03:00)"
        ) from None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


class Command(BaseCommand):
    help = (
        "Write journal entries to stdout as CSV or JSON Lines. --since is inclusive, --until "
        "exclusive; a date or date-time without an offset is in the TIME_ZONE setting."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--format", choices=("csv", "jsonl"), required=True)
        parser.add_argument("--since", help="ISO 8601 date or date-time, inclusive")
        parser.add_argument("--until", help="ISO 8601 date or date-time, exclusive")
        parser.add_argument("--contour", help="contour slug; all contours when omitted")
        parser.add_argument("--tool", help="tool name, e.g. create_order; all tools when omitted")
        parser.add_argument(
            "--status", choices=Status.values, help="outcome status; all statuses when omitted"
        )
        parser.add_argument(
            "--excel", action="store_true", help="CSV for a Russian Excel: ';' separator and a BOM"
        )
        parser.add_argument(
            "--signed",
            action="store_true",
            help="JSON Lines an auditor verifies offline "
            "(tools/verify_export.py): whole sealed stretches, each after "
            "its signed checkpoint, and a signed manifest; seals the "
            "entries not sealed yet first",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        since = _parse_moment("--since", options["since"])
        until = _parse_moment("--until", options["until"])
        if since is not None and until is not None and since >= until:
            raise CommandError("--since must be earlier than --until")
        if options["signed"]:
            lines = self._signed(since, until, options)
        else:
            qs = entries(
                since, until, options["contour"], tool=options["tool"], status=options["status"]
            )
            lines = (
                iter_csv(qs, excel=options["excel"])
                if options["format"] == "csv"
                else iter_jsonl(qs)
            )
        try:
            for chunk in batched(lines):
                self.stdout.write(chunk, ending="")
            self.stdout.flush()
        except BrokenPipeError:
            # The reader (e.g. `| head`) went away: stop quietly, as shell tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)

    def _signed(
        self, since: datetime | None, until: datetime | None, options: dict[str, Any]
    ) -> Iterator[str]:
        if options["format"] != "jsonl" or options["excel"]:
            raise CommandError("--signed writes JSON Lines: use --format jsonl")
        if options["tool"] or options["status"]:
            raise CommandError(
                "--signed exports whole sealed stretches of chains: "
                "--tool and --status do not apply"
            )
        try:
            seals.seal()
        except seals.SealError as exc:
            raise CommandError(f"the journal cannot be sealed: {exc}") from None
        return iter_signed_jsonl(checkpoints(since, until, options["contour"]))
