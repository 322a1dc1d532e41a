"""manage.py journal_checkpoint [--output PATH]: export the head as a checkpoint to keep elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit import checkpoints


class Command(BaseCommand):
    help = (
        "Print (or write to a new file) every journal chain's head as a checkpoint: one JSON "
        "line per chain with chain, seq, last_id, last_hash, key_id and at. Keep it off the "
        "database host; verify_journal --checkpoint FILE later proves the journal still "
        "extends it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output",
            metavar="PATH",
            help="write to this new file (an existing file is never replaced)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            found = checkpoints.current()
        except checkpoints.CheckpointError as exc:
            raise CommandError(str(exc)) from None
        if not found:
            raise CommandError("the journal is empty: there is nothing to anchor yet")
        if options["output"] is None:
            self.stdout.write(checkpoints.as_lines(found), ending="")
            return
        path = Path(options["output"])
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(checkpoints.as_lines(found))
        except FileExistsError:
            raise CommandError(f"{path} exists: a checkpoint is never overwritten") from None
        except OSError as exc:
            raise CommandError(f"{path}: cannot write the checkpoint ({exc})") from None
        self.stdout.write(
            f"checkpoint of {len(found)} chain head(s), the latest at entry "
            f"{max(c.last_id for c in found)}, written to {path}"
        )
