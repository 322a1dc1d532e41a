"""One client session's steps, the same for every Python client (the node script does the same):
the list, a search, a two-phase create_order, a read of what it created, and a refusal.

Each session's order is its own (a number in the description): the same arguments again would
be the gateway's duplicate protection answering, not a new two-phase write. The refusal passes
any client's schema check (the Agents SDK checks required fields itself) and is refused by the
gateway: the amount does not add up."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from tests.conftest import order_args

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
ListNames = Callable[[], Awaitable[list[str]]]


def envelope_of(text: str, is_error: bool) -> dict[str, Any]:
    """The gateway's envelope (the result's text is the same JSON as its structured content)."""
    return {**json.loads(text), "isError": bool(is_error)}


async def steps(list_names: ListNames, call: Call) -> dict[str, Any]:
    done: dict[str, Any] = {"tools": await list_names()}
    done["find"] = await call("find_orders", {})
    args = order_args()
    args["description"] += f" №{uuid.uuid4().hex[:8]}"
    done["prepared"] = await call("create_order", args)
    token = (done["prepared"].get("confirmation") or {}).get("token")
    done["created"] = await call("create_order", {**args, "confirmation_token": token})
    done["read"] = await call(
        "get_order", {"order_id": (done["created"].get("data") or {}).get("order_id")}
    )
    done["refused"] = await call("create_order", {**args, "amount": "1"})
    return done
