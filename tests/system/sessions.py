"""One client session's steps, the same for every Python client (the node script does the same):
the list, a search, a two-phase create_order, a read of what it created, and a refusal."""

from __future__ import annotations

import json
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
    done["prepared"] = await call("create_order", args)
    token = (done["prepared"].get("confirmation") or {}).get("token")
    done["created"] = await call("create_order", {**args, "confirmation_token": token})
    done["read"] = await call("get_order", {"order_id": (done["created"].get("data") or {})
                                            .get("order_id")})
    done["refused"] = await call("create_order", {})
    return done
