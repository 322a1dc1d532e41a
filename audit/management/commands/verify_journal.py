"""manage.py verify_journal: check the hash chain; exit 1 naming the first broken entry."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from audit.journal import check_chain


class Command(BaseCommand):
    help = "Check the journal's hash chain: exit 0 when it holds, else name the first broken entry."

    def handle(self, *args: Any, **options: Any) -> None:
        report = check_chain()
        if report.broken_id is not None:
            self.stderr.write(
                f"broken: entry {report.broken_id} ({report.checked} entries before it are intact)"
            )
            sys.exit(1)
        self.stdout.write(f"ok: {report.checked} entries")
