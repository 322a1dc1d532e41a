"""The shapes of the API's answers: pydantic bases and field types, paging, date format."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from invoicebox.money import to_kopecks


def paging(page: int, page_size: int) -> list[tuple[str, str]]:
    """Both spellings with the same values: the docs' page/pageSize (docs/api/filters.md:34-36)
    and the vendor code's _page/_pageSize (MCP src/tools/reads.ts:222-223)."""
    return [
        ("_page", str(page)),
        ("page", str(page)),
        ("_pageSize", str(page_size)),
        ("pageSize", str(page_size)),
    ]


@dataclass(frozen=True)
class PageMeta:
    total: int | None  # metaData.totalCount, when sent
    page: int
    size: int  # the server's page size: metaData.pageSize, else what was asked (or more rows)


class Upstream(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _json_number(value: Any) -> Any:
    # Money from the API is a JSON number (parsed as Decimal or int); a string is a wrong shape.
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise ValueError(f"money must be a JSON number, got {type(value).__name__}")
    return value


Money = Annotated[Decimal, BeforeValidator(_json_number)]
# A quantity is a JSON number too (3 or 1.5), kept as the exact Decimal that was parsed.
Quantity = Annotated[Decimal, BeforeValidator(_json_number)]


def _as_text(value: Any) -> Any:
    # Ids, OGRNs, zip codes and tag-1212 item types may come as JSON integers: keep text.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_as_text)]


def kopecks_or_none(value: Decimal | None) -> int | None:
    return None if value is None else to_kopecks(value)


def atom(moment: datetime) -> str:
    """The API's date format: ISO 8601 to the second with the offset (PHP DATE_ATOM)."""
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no offset to send")
    return moment.isoformat(timespec="seconds")
