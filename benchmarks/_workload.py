"""The in-process workload: gateway calls and the same work through the Invoicebox client alone."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from audit.actors import SCAFFOLDING

ACTOR = "key:bench"
CHANNEL = "rest"


class Workload:
    """A sandbox contour with writes on, one order to read, and both ways of calling.

    Needs Django set up and migrated. Every write gets fresh arguments (a numbered
    description), so the dedup window never answers a call with an earlier result.
    """

    def __init__(self, slug: str = "bench") -> None:
        from sandbox.api import clear_faults
        from tools import catalog
        from tools.contours.services import create_contour

        self.contour = create_contour(
            slug, mode="sandbox", name="Bench", toolsets=["read", "write"], actor=SCAFFOLDING
        )
        clear_faults(self.contour.api_token)
        self.spec = catalog.get("create_order")
        self.run_id = uuid.uuid4().hex[:8]
        self._counter = iter(range(10**9))
        seed = self.new_args()
        self.order_id = self.execute(seed, self.prepare(seed)).data["order_id"]

    def client(self) -> Any:
        from invoicebox.client import make_client

        # The core builds one client per call, so the direct path does too.
        c = self.contour
        return make_client(
            base_url=c.base_url,
            token=c.api_token,
            merchant_id=c.merchant_id,
            api_prefix=c.api_prefix,
        )

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        from tools.pipeline import gateway

        return gateway.call(self.contour, name, arguments, channel=CHANNEL, actor=ACTOR)

    def new_args(self) -> dict[str, Any]:
        from harness.orders import order_args

        return order_args(description=f"Бенчмарк {self.run_id} №{next(self._counter)}")

    # -- through the gateway ---------------------------------------------------------------

    def read(self) -> Any:
        outcome = self.call("get_order", {"order_id": self.order_id})
        assert outcome.status == "ok", outcome.as_dict()
        return outcome

    def prepare(self, args: dict[str, Any]) -> str:
        outcome = self.call("create_order", args)
        assert outcome.status == "confirmation_required", outcome.as_dict()
        return outcome.confirmation["token"]

    def execute(self, args: dict[str, Any], token: str) -> Any:
        outcome = self.call("create_order", {**args, "confirmation_token": token})
        assert outcome.status == "ok" and not outcome.replayed, outcome.as_dict()
        return outcome

    # -- the Invoicebox client alone, same sandbox -------------------------------------------

    def direct_read(self) -> Any:
        with self.client() as c:
            return c.get_order(self.order_id)

    def direct_create(self) -> Callable[[], Any]:
        """A ready-to-time create_order with typed data prepared outside the timing."""
        from tools.catalog.order_create import build_new_order
        from tools.validation import validate

        params = validate(self.spec.params, self.new_args())
        merchant_order_id = f"bench-{self.run_id}-{next(self._counter)}"

        def go() -> Any:
            with self.client() as c:
                return c.create_order(build_new_order(params, merchant_order_id))

        return go
