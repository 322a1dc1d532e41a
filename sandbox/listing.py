"""List endpoints (docs/api/filters.md): PHP-style query, filters, sorting, paging."""

from __future__ import annotations

import datetime as dt
import functools
import operator
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import F, OrderBy, Q, QuerySet

from sandbox.calls import Call, repeated_rows
from sandbox.models import SandboxOrder
from sandbox.responses import ApiError, SandboxResponse, filter_error
from sandbox.values import bad_text, parse_datetime

DEFAULT_PAGE_SIZE = 30
MAX_PAGE_SIZE = 100  # [sandbox] the real maximum is unknown; larger requests are clamped.
MAX_PAGE = 1_000_000
# The stuck pager (the loop_pages fault) pages by this many rows, so that a short list has pages.
LOOP_PAGE_SIZE = 2
# Paging: the docs say page/pageSize (api/filters.md), the MCP server and backend-test-app
# send _page/_pageSize. Both are accepted; the two spellings disagreeing is refused.
PAGE_NAMES = ("_page", "page")
PAGE_SIZE_NAMES = ("_pageSize", "pageSize")
_CONTROL_PARAMS = frozenset({*PAGE_NAMES, *PAGE_SIZE_NAMES, "_order"})

_QueryValue = str | list[str] | dict[str, str]
_QUERY_KEY = re.compile(r"([^\[\]]+)(?:\[([^\[\]]*)\])?")
COMPARISONS = {
    "_eq": "exact",
    "_ne": "exact",
    "_gt": "gt",
    "_ge": "gte",
    "_lt": "lt",
    "_le": "lte",
}
_FILTERS: dict[str, tuple[str, str, frozenset[str]]] = {
    "id": ("order_id", "uuid", frozenset({"_eq", "_ne"})),
    "status": ("status", "status", frozenset({"_eq", "_ne"})),
    "merchantOrderId": ("merchant_order_id", "string", frozenset({"_eq", "_ne", "_start"})),
    # The SDK's FindOrderTest filters by merchantId (one token may see several shops).
    "merchantId": ("merchant_id", "uuid", frozenset({"_eq", "_ne"})),
    "createdAt": ("created_at", "datetime", frozenset(COMPARISONS)),
    "expirationDate": ("expiration_date", "datetime", frozenset(COMPARISONS)),
    "paidAt": ("paid_at", "datetime", frozenset(COMPARISONS)),
    # The docs' own example (api/filters.md:18-21): amount[_gt]=1000, with every comparison.
    "amount": ("amount", "money", frozenset(COMPARISONS)),
    "vatAmount": ("vat_amount", "money", frozenset(COMPARISONS)),
}
_SORTS = {
    "createdAt": "created_at",
    "expirationDate": "expiration_date",
    "paidAt": "paid_at",
    "id": "order_id",
    "merchantOrderId": "merchant_order_id",
}


@dataclass(frozen=True)
class Listing:
    """What one filter endpoint accepts: filters (column, kind, operators) and sorts."""

    filters: Mapping[str, tuple[str, str, frozenset[str]]]
    sorts: Mapping[str, str]
    tie: str = "seq"  # the primary key: a stable tie-break for equal sort values
    kind: str = "orders"  # its name for the INVOICEBOX_SANDBOX_REPEAT_ROWS fault


ORDER_LISTING = Listing(_FILTERS, _SORTS)


def php_query(pairs: Iterable[tuple[str, str]]) -> dict[str, _QueryValue]:
    """Read a query string the way PHP does: `a=1&a=2` keeps the last value, `a[]=` builds a
    list, `a[op]=` a map. The real API is PHP, so a client that repeats `status=` without
    brackets gets only the last status there, and here too."""
    out: dict[str, _QueryValue] = {}
    for key, value in pairs:
        match = _QUERY_KEY.fullmatch(key)
        if match is None:
            continue
        name, sub = match.group(1), match.group(2)
        current = out.get(name)
        if sub is None:
            out[name] = value
        elif sub == "" or sub.isdigit():
            # `status[]=` and PHP's http_build_query `status[0]=` (the SDK's Filter) alike.
            out[name] = [*current, value] if isinstance(current, list) else [value]
        else:
            mapping = current if isinstance(current, dict) else {}
            mapping[sub] = value
            out[name] = mapping
    return out


def bad_query(name: str, message: str) -> ApiError:
    # The code is backend-test-app's WrongFilterFormat; the MCP server notes a malformed
    # _order answered with 422 (src/tools/reads.ts). Field entries and messages are ours.
    return filter_error(name, message)


def _status_q(value: str, now: dt.datetime) -> Q:
    # Expiry is computed on read, so the stored `created` splits into created and expired.
    if value == SandboxOrder.Status.EXPIRED:
        return Q(status=value) | Q(status=SandboxOrder.Status.CREATED, expiration_date__lte=now)
    if value == SandboxOrder.Status.CREATED:
        return Q(status=value, expiration_date__gt=now)
    return Q(status=value)


def _filter_q(
    filters: Mapping[str, tuple[str, str, frozenset[str]]],
    name: str,
    op: str,
    raw: str,
    now: dt.datetime,
) -> Q:
    column, kind, _ = filters[name]
    label = name if op == "_eq" else f"{name}[{op}]"
    if bad_text(raw):
        raise bad_query(label, "This value contains characters that are not allowed.")
    value: Any = raw
    if kind == "status":
        condition = _status_q(raw, now)
    else:
        if kind == "uuid":
            try:
                value = uuid.UUID(raw)
            except ValueError:
                raise bad_query(label, "This is not a valid UUID.") from None
        elif kind == "datetime":
            value = parse_datetime(raw)
            if value is None:
                raise bad_query(label, "This is not a valid date (ISO 8601 expected).")
        elif kind == "money":
            if not re.fullmatch(r"[0-9]{1,12}(\.[0-9]{1,2})?", raw):
                raise bad_query(label, "A number with two decimals at most is expected.")
            value = Decimal(raw)
        elif kind == "int":
            if not re.fullmatch(r"[0-9]{1,18}", raw):
                raise bad_query(label, "A positive integer is expected.")
            value = int(raw)
        lookup = "startswith" if op == "_start" else COMPARISONS[op]
        condition = Q(**{f"{column}__{lookup}": value})
    return ~condition if op == "_ne" else condition


def _filters(
    params: Mapping[str, _QueryValue], now: dt.datetime, listing: Listing = ORDER_LISTING
) -> Q:
    condition = Q()
    table = listing.filters
    ignore = getattr(settings, "INVOICEBOX_SANDBOX_UNKNOWN_QUERY", "refuse") == "ignore"
    for name in params:
        # [sandbox] refused, not ignored: a misspelt filter or paging name (limit, per_page)
        # would otherwise look applied. The docs: a request off the contract gets an error.
        # INVOICEBOX_SANDBOX_UNKNOWN_QUERY=ignore drops it instead, as BTA does.
        if name not in table and name not in _CONTROL_PARAMS and not ignore:
            raise bad_query(name, "Unknown filter.")
    for name, (_, _, ops) in table.items():
        raw = params.get(name)
        if raw is None:
            continue
        if isinstance(raw, str):
            condition &= _filter_q(table, name, "_eq", raw, now)
        elif isinstance(raw, list):
            condition &= functools.reduce(
                operator.or_, (_filter_q(table, name, "_eq", v, now) for v in raw)
            )
        else:
            for op, value in raw.items():
                if op not in ops:
                    if ignore:
                        continue
                    raise bad_query(f"{name}[{op}]", "Unknown filter operator.")
                condition &= _filter_q(table, name, op, value, now)
    return condition


def _ordering(raw: _QueryValue | None, listing: Listing = ORDER_LISTING) -> list[OrderBy | str]:
    # [sandbox] the default order (newest first) is our choice.
    if raw is None:
        return [F("created_at").desc(), f"-{listing.tie}"]
    if not isinstance(raw, dict) or not raw:
        raise bad_query("_order", "Use _order[field]=asc|desc.")
    ordering: list[OrderBy | str] = []
    ignore = getattr(settings, "INVOICEBOX_SANDBOX_UNKNOWN_QUERY", "refuse") == "ignore"
    for name, direction in raw.items():
        column, way = listing.sorts.get(name), direction.lower()
        if column is None and ignore and way in ("asc", "desc"):
            continue  # BTA RequestQueryBuilder.php:65 drops a sort on an unknown field
        if column is None or way not in ("asc", "desc"):
            raise bad_query(f"_order[{name}]", "Use _order[field]=asc|desc.")
        ordering.append(
            F(column).desc(nulls_last=True) if way == "desc" else F(column).asc(nulls_last=True)
        )
    if not ordering:
        return [F("created_at").desc(), f"-{listing.tie}"]
    first_way = next(iter(raw.values())).lower()
    ordering.append(f"-{listing.tie}" if first_way == "desc" else listing.tie)
    return ordering


# [sandbox] INVOICEBOX_SANDBOX_PAGING: which paging names the sandbox reads, so that the
# client is tested against a server that reads either spelling or neither (then it answers
# its first page at its default size, as a server that ignores them would).
PAGING_MODES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "both": (PAGE_NAMES, PAGE_SIZE_NAMES),
    "docs": (("page",), ("pageSize",)),
    "vendor": (("_page",), ("_pageSize",)),
    "none": ((), ()),
}


def _paging_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return PAGING_MODES[getattr(settings, "INVOICEBOX_SANDBOX_PAGING", "both")]


def _int_param(
    params: Mapping[str, _QueryValue], names: tuple[str, ...], default: int, high: int | None
) -> int:
    values: dict[str, int] = {}
    for name in names:
        raw = params.get(name)
        if raw is None:
            continue
        if not isinstance(raw, str) or not re.fullmatch(r"[0-9]{1,9}", raw) or int(raw) < 1:
            raise bad_query(name, "A positive integer is expected.")
        value = int(raw)
        if high is not None and value > high:
            raise bad_query(name, f"At most {high}.")
        values[name] = value
    if len(set(values.values())) > 1:
        raise bad_query(names[-1], f"{' and '.join(names)} disagree.")
    return next(iter(values.values()), default)


def paged(
    call: Call,
    rows: QuerySet[Any],
    listing: Listing,
    payload: Callable[[Any], Any],
    *,
    ignored: frozenset[str] = frozenset(),
) -> SandboxResponse:
    """One page of the merchant's rows under the query's filters, with metaData; a filter
    named in `ignored` is read and dropped, as a server that doesn't apply it."""
    params = {k: v for k, v in php_query(call.query).items() if k not in ignored}
    page_names, size_names = _paging_names()
    page = _int_param(params, page_names, 1, MAX_PAGE)
    page_size = min(_int_param(params, size_names, DEFAULT_PAGE_SIZE, None), MAX_PAGE_SIZE)
    if not getattr(settings, "INVOICEBOX_SANDBOX_SHARED_TOKEN", False):
        # INVOICEBOX_SANDBOX_SHARED_TOKEN: one token sees every shop's rows (several merchants
        # per token); only a merchantId filter narrows them, and the client must send it.
        rows = rows.filter(merchant_id=call.merchant_id)
    rows = rows.filter(_filters(params, call.now, listing))
    ordering = _ordering(params.get("_order"), listing)
    total = rows.count()
    start = (page - 1) * page_size
    if call.faults is not None and call.faults.loop_pages:
        # A stuck pager: small pages, every one the first, each named as the page asked.
        page_size, start = min(page_size, LOOP_PAGE_SIZE), 0
    found = list(rows.order_by(*ordering)[start : start + page_size])
    return call.ok(
        {
            "data": repeated_rows([payload(row) for row in found], listing.kind, call.faults),
            "extendedData": [],
            "metaData": {"totalCount": total, "pageSize": page_size, "page": page},
        }
    )
