"""OKEI signs the sandbox knows, to refuse a `measure` that doesn't match its `measureCode`.

Every code of the one table (invoicebox/okei.py, each with its witness): the docs'
table, the Rosstat signs for the codes it omits, and the pairs the vendor's own code sends
(`год`/366, `компл`/704 from the MCP server, `шт.`/796 from the Bitrix module). Matching is
exact otherwise.
"""

from __future__ import annotations

from invoicebox.okei import UNITS

# The one table (invoicebox/okei.py): each code's sign and the vendor's own pairs.
OKEI_SIGNS: dict[str, frozenset[str]] = {
    unit.code: frozenset((unit.sign, *unit.also)) for unit in UNITS
}


def measure_mismatch(measure: str, code: str) -> str:
    """Why `measure` is not a sign of `code` ('' when it is, or when the code is unknown)."""
    signs = OKEI_SIGNS.get(code)
    if signs is None or measure in signs:
        return ""
    return f"The measure does not match OKEI code {code} ({', '.join(sorted(signs))})."
