"""manage.py archive_journal --before YYYY-MM: archive a closed month, verify, then remove it
(on PostgreSQL: detach its month partition, audit/archive.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit import archive


class Command(BaseCommand):
    help = (
        "Write the journal's entries before month YYYY-MM (whole sealed stretches) to a new "
        "signed archive file, verify it with tools/verify_export.py and the public keys, "
        "and only then remove those rows (on PostgreSQL: detach each month partition that "
        "holds only archived rows, and delete the rest). --keep-rows: write and verify only; "
        "--from-archive FILE: verify a file written earlier (e.g. after copying it to "
        "cold storage) and remove the rows it carries."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--before",
            required=True,
            metavar="YYYY-MM",
            help="archive entries written before this month (a closed one)",
        )
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--output", metavar="FILE", help="the new archive file")
        target.add_argument(
            "--from-archive",
            metavar="FILE",
            help="an archive written earlier by --output ... --keep-rows",
        )
        parser.add_argument(
            "--keep-rows",
            action="store_true",
            help="with --output: write and verify, remove nothing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            boundary = archive.month_start(options["before"])
            if options["output"] is not None:
                path = Path(options["output"])
                stretches = archive.prepare(boundary)
                if not stretches:
                    self.stdout.write(f"nothing to archive before {options['before']}")
                    return
                archive.write(path, stretches)
            else:
                path = Path(options["from_archive"])
                stretches = archive.due(boundary)
                if not stretches:
                    raise CommandError(
                        f"nothing is due before {options['before']}: the "
                        "archive was applied already, or never written"
                    )
            digest = archive.verify(path, stretches)
            rows = sum(s.to_seq - s.from_seq + 1 for s in stretches)
            chains = len({s.chain for s in stretches})
            if options["keep_rows"]:
                self.stdout.write(
                    f"archive verified: {rows} entries of {chains} chain(s) in "
                    f"{path} (sha256 {digest}); nothing removed"
                )
                return
            removed, detached = archive.remove(stretches, f"{path.name} sha256:{digest}", boundary)
        except archive.ArchiveError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"archived and removed {removed} entries of {chains} chain(s) "
            f"before {options['before']}: {path} (sha256 {digest})"
        )
        if detached:
            self.stdout.write(
                f"detached partition(s), now tables of their own (DROP TABLE "
                f"when the archive is stored): {', '.join(detached)}"
            )
