"""docs/api.md says what the code answers: every stable code with its status and HTTP status,
and the catalog in its order with each tool's kind and toolset."""

from __future__ import annotations

import re

from tests.docs.helpers import DOCS, block, table_rows
from tools.catalog import CATALOG
from tools.errors import CODE_STATUS
from tools.formats.registry import formats

API = (DOCS / "api.md").read_text(encoding="utf-8")


def test_the_code_table_is_code_status_exactly():
    # given: the doc's table, code -> (status, HTTP)
    documented = {
        code: (status, int(http)) for code, status, http, _ in table_rows(block(API, "codes"))
    }

    # then: nothing missing, nothing extra, nothing stale
    assert sorted(set(CODE_STATUS) - set(documented)) == [], "codes missing from docs/api.md"
    assert sorted(set(documented) - set(CODE_STATUS)) == [], (
        "docs/api.md names codes the code lacks"
    )
    assert {code: documented[code] for code in CODE_STATUS} == CODE_STATUS


def test_every_documented_code_says_what_it_means():
    assert [row[0] for row in table_rows(block(API, "codes")) if not row[3]] == []


def test_the_catalog_table_is_the_catalog_in_order():
    documented = [tuple(row) for row in table_rows(block(API, "catalog"))]

    assert documented == [(spec.name, str(spec.kind), str(spec.toolset)) for spec in CATALOG]


def test_the_format_list_is_every_format_served():
    # A new function format (docs/how-to.md, "Add a function format", step 6) must be named.
    (listed,) = re.findall(r"`GET /api/v1/tools\?format=(\w[\w-]*(?:\|[\w-]+)+)`", API)

    assert sorted(listed.split("|")) == sorted(formats())
