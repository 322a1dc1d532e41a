"""manage.py verify_journal: check the HMAC chain (and checkpoints); exit 1 naming the break."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.checkpoints import CheckpointError, load, parse
from audit.journal import Anchor
from audit.walk import check_chain


class Command(BaseCommand):
    help = (
        "Check the journal's HMAC chain: exit 0 when it holds, else name the first broken "
        "entry. With --checkpoint (or --after-id and --hash) prove that the journal still "
        "extends checkpoints exported earlier, walking only the entries after them "
        "(--full: every entry)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--checkpoint",
            action="append",
            default=[],
            metavar="FILE",
            help="a file written by journal_checkpoint (one JSON object, or "
            "one per line); may be repeated",
        )
        parser.add_argument(
            "--after-id",
            type=int,
            metavar="N",
            help="the last_id of a checkpoint given on the command line",
        )
        parser.add_argument("--hash", metavar="H", help="the last_hash that goes with --after-id")
        parser.add_argument(
            "--full",
            action="store_true",
            help="walk every entry even when checkpoints are given (by default "
            "a checkpoint's chains are walked only after it)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        anchors = self._anchors(options)
        report = check_chain(anchors, full=options["full"] or not anchors)
        if report.broken_id is not None:
            self.stderr.write(
                f"broken: entry {report.broken_id} {report.reason} "
                f"({report.checked} entries before it are intact)"
            )
            sys.exit(1)
        line = f"ok: {report.checked} entries" + (
            "" if options["full"] or not anchors else " after the checkpoints"
        )
        if anchors:
            line += (
                f"; extends {len(anchors)} checkpoint(s), the latest at entry "
                f"{max(a.last_id for a in anchors)}"
            )
        self.stdout.write(line)

    def _anchors(self, options: dict[str, Any]) -> list[Anchor]:
        anchors: list[Anchor] = []
        try:
            for name in options["checkpoint"]:
                anchors.extend(checkpoint.anchor() for checkpoint in load(Path(name)))
            after_id, given_hash = options["after_id"], options["hash"]
            if (after_id is None) != (given_hash is None):
                raise CommandError("--after-id and --hash go together")
            if after_id is not None:
                data = {"last_id": after_id, "last_hash": given_hash.strip().lower()}
                anchors.append(parse(data, "--after-id/--hash").anchor())
        except CheckpointError as exc:
            raise CommandError(str(exc)) from None
        seen: dict[int, str] = {}
        for anchor in anchors:
            if seen.setdefault(anchor.last_id, anchor.last_hash) != anchor.last_hash:
                raise CommandError(
                    f"two checkpoints for entry {anchor.last_id} disagree on its "
                    "hash: at least one of them is not genuine"
                )
        return anchors
