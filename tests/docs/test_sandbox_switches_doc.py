"""docs/invoicebox-api.md lists each sandbox switch (what it models, its witnesses): the table
between the `switches` markers names every switch config/settings/invoicebox.py declares."""

from __future__ import annotations

import re

from tests.docs.helpers import DOCS, block, table_rows
from tests.tools.test_shipment_switches import declared_switches


def test_the_switch_table_names_every_sandbox_switch() -> None:
    table = block((DOCS / "invoicebox-api.md").read_text(encoding="utf-8"), "switches")
    rows = table_rows(table)
    named = {re.match(r"(INVOICEBOX_SANDBOX_\w+)", row[0]).group(1) for row in rows}  # type: ignore[union-attr]

    assert named == declared_switches()
    # each row says what the switch models and its witnesses
    assert all(len(row) == 4 and row[1] and row[2] for row in rows)
