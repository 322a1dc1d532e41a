"""Fault switches per account: latency, 5xx, 429, reset, lost responses; and their endpoints."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F

from sandbox.accounts import account_for_token
from sandbox.calls import Call, read_json_object
from sandbox.models import SandboxAccount, SandboxFaults
from sandbox.responses import (
    ApiError,
    SandboxResponse,
    field_error,
    validation_error,
)

MAX_LATENCY_MS = 60_000
MAX_FAIL_NEXT = 1_000_000
# Switches applied to an order create after the order is stored (invoicebox/models.py).
AFTER_CREATE = ("fail_after_create", "wrong_order_after_create", "notify_before_answer")
# Switches applied to the lists (sandbox/calls.py repeated_rows, sandbox/listing.py paged).
LIST_FAULTS = ("repeat_rows", "loop_pages")
BOOLEANS = ("drop_response_after_create", *AFTER_CREATE, *LIST_FAULTS)


def _fault_problems(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    latency = values["latency_ms"]
    if (
        isinstance(latency, bool)
        or not isinstance(latency, int)
        or not 0 <= latency <= MAX_LATENCY_MS
    ):
        problems.append(("latency_ms", f"an integer from 0 to {MAX_LATENCY_MS}"))
    rate = values["error_rate"]
    if isinstance(rate, bool) or not isinstance(rate, int | float | Decimal) or not 0 <= rate <= 1:
        problems.append(("error_rate", "a number from 0 to 1"))
    fail_next = values["fail_next"]
    if (
        isinstance(fail_next, bool)
        or not isinstance(fail_next, int)
        or not 0 <= fail_next <= MAX_FAIL_NEXT
    ):
        problems.append(("fail_next", f"an integer from 0 to {MAX_FAIL_NEXT}"))
    for name in BOOLEANS:
        if not isinstance(values[name], bool):
            problems.append((name, "a boolean"))
    for name in ("rate_limit_next", "reset_next"):
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FAIL_NEXT:
            problems.append((name, f"an integer from 0 to {MAX_FAIL_NEXT}"))
    return problems


def _store_faults(account: SandboxAccount, values: Mapping[str, Any]) -> SandboxFaults:
    with transaction.atomic():
        faults, _ = SandboxFaults.objects.update_or_create(
            account=account,
            defaults={
                "latency_ms": values["latency_ms"],
                "error_rate": float(values["error_rate"]),
                "fail_next": values["fail_next"],
                "drop_response_after_create": values["drop_response_after_create"],
                "rate_limit_next": values["rate_limit_next"],
                "reset_next": values["reset_next"],
                **{name: values[name] for name in (*AFTER_CREATE, *LIST_FAULTS)},
            },
        )
    return faults


def set_faults(
    token: str,
    *,
    latency_ms: int = 0,
    error_rate: float = 0.0,
    fail_next: int = 0,
    drop_response_after_create: bool = False,
    rate_limit_next: int = 0,
    reset_next: int = 0,
    fail_after_create: bool = False,
    wrong_order_after_create: bool = False,
    notify_before_answer: bool = False,
    repeat_rows: bool = False,
    loop_pages: bool = False,
) -> None:
    """Replace the fault switches of the account behind `token` (ValueError if unknown).

    rate_limit_next: the next N requests get 429 with Retry-After; reset_next: the next N
    requests lose the connection before the application sees them (nothing happens);
    repeat_rows: every list answers each row twice; loop_pages: every page of a list answers
    the first page's rows (a stuck pager).
    """
    account = account_for_token(token)
    if account is None:
        raise ValueError("unknown sandbox token")
    values = {
        "latency_ms": latency_ms,
        "error_rate": error_rate,
        "fail_next": fail_next,
        "drop_response_after_create": drop_response_after_create,
        "rate_limit_next": rate_limit_next,
        "reset_next": reset_next,
        "fail_after_create": fail_after_create,
        "wrong_order_after_create": wrong_order_after_create,
        "notify_before_answer": notify_before_answer,
        "repeat_rows": repeat_rows,
        "loop_pages": loop_pages,
    }
    problems = _fault_problems(values)
    if problems:
        raise ValueError("; ".join(f"{name}: {hint}" for name, hint in problems))
    _store_faults(account, values)


def clear_faults(token: str) -> None:
    """Switch every fault of the account behind `token` off (a no-op for an unknown token)."""
    account = account_for_token(token)
    if account is not None:
        SandboxFaults.objects.filter(account=account).delete()


def _faults_payload(faults: SandboxFaults | None) -> dict[str, Any]:
    return {
        "latency_ms": faults.latency_ms if faults else 0,
        "error_rate": faults.error_rate if faults else 0.0,
        "fail_next": faults.fail_next if faults else 0,
        "drop_response_after_create": faults.drop_response_after_create if faults else False,
        "rate_limit_next": faults.rate_limit_next if faults else 0,
        "reset_next": faults.reset_next if faults else 0,
        **{name: bool(faults and getattr(faults, name)) for name in (*AFTER_CREATE, *LIST_FAULTS)},
    }


def _take_fail_next(account: SandboxAccount, name: str = "fail_next") -> bool:
    # One conditional UPDATE: concurrent workers never consume the same failure twice.
    updated = SandboxFaults.objects.filter(pk=account.pk, **{f"{name}__gt": 0}).update(
        **{name: F(name) - 1}
    )
    return updated == 1


# [sandbox] the real 429 body and headers are undocumented.
RATE_LIMIT_RETRY_AFTER = "1"


class ConnectionReset(Exception):
    """The reset fault: the connection drops before the request reaches the application."""


def apply_faults(
    faults: SandboxFaults, account: SandboxAccount, timeout: float | None
) -> tuple[ApiError | None, bool]:
    """Sleep the latency; return (the injected 5xx or None, whether the client timed out).

    A reset raises ConnectionReset; a 429 is returned like a 5xx. Both come first and never
    reach the application, as a front proxy's refusal would not.
    """
    if faults.reset_next and _take_fail_next(account, "reset_next"):
        raise ConnectionReset
    if faults.rate_limit_next and _take_fail_next(account, "rate_limit_next"):
        return ApiError(
            429,
            "too_many_requests",
            "Too Many Requests",
            headers={"Retry-After": RATE_LIMIT_RETRY_AFTER},
        ), False
    timed_out = False
    if faults.latency_ms:
        delay = faults.latency_ms / 1000
        if timeout is not None and delay > timeout:
            # The in-process transport has no socket timeout of its own: emulate the client
            # giving up. The request is still handled, as a slow real server would.
            time.sleep(timeout)
            timed_out = True
        else:
            time.sleep(delay)
    if faults.fail_next and _take_fail_next(account):
        return ApiError(503, "service_unavailable", "Service Unavailable"), timed_out
    # error_rate 1.0 always fails and 0.0 never does, which keeps tests deterministic.
    if faults.error_rate and secrets.randbelow(1_000_000) < faults.error_rate * 1_000_000:
        return ApiError(500, "internal_error", "Internal Server Error"), timed_out
    return None, timed_out


# ---- sandbox-only endpoints (they do not exist on the real API)


def get_faults(call: Call) -> SandboxResponse:
    return call.ok({"data": _faults_payload(call.faults), "extendedData": []})


def put_faults(call: Call) -> SandboxResponse:
    """PUT /v3/_sandbox/faults: sandbox only, so a live multi-process server can be configured."""
    assert call.account is not None
    data = read_json_object(call)
    # PUT replaces: a field left out is switched off.
    values: dict[str, Any] = {**_faults_payload(None), **data}
    problems = [(name, "unknown field") for name in data if name not in _faults_payload(None)]
    if not problems:
        problems = _fault_problems(values)
    if problems:
        raise validation_error([field_error(name, "wrong_value", hint) for name, hint in problems])
    faults = _store_faults(call.account, values)
    return call.ok({"data": _faults_payload(faults), "extendedData": []})


def delete_faults(call: Call) -> SandboxResponse:
    SandboxFaults.objects.filter(account=call.account).delete()
    return call.ok({"data": _faults_payload(None), "extendedData": []})
