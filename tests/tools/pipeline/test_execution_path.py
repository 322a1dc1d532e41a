"""How execution reads: one create_order executed through gateway.call, traced with
sys.setprofile. A stay is a maximal run of the innermost frame of ours in one module; a return
is a stay in a module an earlier stay had already left. Three views of one trace:

- the core (tools.*): every module of ours, the models and helpers too;
- the pipeline (tools.pipeline.*): the rest of the core folded into the pipeline module that
  called it;
- the steps: the pipeline with its helpers folded too. A helper is a module each of whose stays
  goes back to the module that called it (the confirmations, ceilings, facts, call trace and
  upstream calls asked for one thing); what remains is the modules that hand the thread of
  execution on, where a reader has to follow it.

Execution that goes back and forth between the modules that hold its steps is hard to read and
to change: the bound below keeps it to the gateway and one module, entered once.
`.venv/bin/pytest -q -s tests/tools/pipeline/test_execution_path.py` prints the figures
(benchmarks/README.md, "How execution reads")."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import pytest

from audit.actors import SCAFFOLDING
from sandbox.api import clear_faults, set_faults
from tests.conftest import order_args
from tools.contours.services import DEMO_TOKEN, create_contour
from tools.errors import Outcome
from tools.models import ApiKey, Contour
from tools.pipeline import gateway

pytestmark = pytest.mark.django_db

CORE = "tools."
PIPELINE = "tools.pipeline."


@dataclass(frozen=True)
class Walk:
    stays: list[str]  # the module of each stay, in order

    @property
    def modules(self) -> int:
        return len(set(self.stays))

    @property
    def returns(self) -> int:
        return len(self.stays) - self.modules

    def __str__(self) -> str:
        return (
            f"{len(self.stays)} stays in {self.modules} modules, {self.returns} returns to a "
            "module already left\n  " + " > ".join(self.stays)
        )


def collapsed(modules: list[str]) -> list[str]:
    return [module for i, module in enumerate(modules) if i == 0 or modules[i - 1] != module]


def trace(run: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run `run` under a profiler: the modules of ours (tools.*) holding the innermost frame of
    ours, in order. Frames of other packages (Django, the client, the sandbox) are
    transparent: time in them counts to the module of ours that called them."""
    stays: list[str] = []

    def ours(frame: FrameType | None) -> str | None:
        while frame is not None:
            name = str(frame.f_globals.get("__name__", ""))
            if name.startswith(CORE):
                return name
            frame = frame.f_back
        return None

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event in ("call", "return"):
            module = ours(frame if event == "call" else frame.f_back)
            if module is not None and (not stays or stays[-1] != module):
                stays.append(module)

    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return result, stays


def views(stays: list[str]) -> dict[str, Walk]:
    pipeline = collapsed([module for module in stays if module.startswith(PIPELINE)])
    helpers = {
        module
        for module in pipeline
        if all(
            0 < i < len(pipeline) - 1 and pipeline[i - 1] == pipeline[i + 1]
            for i, other in enumerate(pipeline)
            if other == module
        )
    }
    steps = collapsed([module for module in pipeline if module not in helpers])
    return {"core": Walk(stays), "pipeline": Walk(pipeline), "steps": Walk(steps)}


@pytest.fixture
def shop() -> Contour:
    return create_contour("shop", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING)


@pytest.fixture
def actor(shop: Contour) -> str:
    key, _ = ApiKey.issue(shop, label="claude")
    return f"key:{key.prefix}"


def call(shop: Contour, actor: str, arguments: dict[str, Any]) -> Outcome:
    return gateway.call(shop, "create_order", arguments, channel="rest", actor=actor)


def confirmed(shop: Contour, actor: str) -> dict[str, Any]:
    arguments = order_args()  # once: its expiration date is "now", to the second
    prepared = call(shop, actor, arguments)
    return {**arguments, "confirmation_token": prepared.confirmation["token"]}


def report(case: str, walks: dict[str, Walk]) -> None:
    for view, walk in walks.items():
        print(f"\n{case}, {view}: {walk}")


def test_a_first_execution_reads_top_down(shop: Contour, actor: str):
    arguments = confirmed(shop, actor)

    outcome, stays = trace(lambda: call(shop, actor, arguments))

    assert (outcome.status, outcome.replayed) == ("ok", False)
    walks = views(stays)
    report("first execution", walks)
    # Down from the gateway into execution and back once, for the journal entry.
    assert walks["steps"].stays == [
        "tools.pipeline.gateway",
        "tools.pipeline.execution",
        "tools.pipeline.gateway",
    ]


def test_an_execution_recovered_by_lookup_reads_top_down(shop: Contour, actor: str):
    arguments = confirmed(shop, actor)
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    assert call(shop, actor, arguments).code == "outcome_unknown"
    clear_faults(DEMO_TOKEN)

    outcome, stays = trace(lambda: call(shop, actor, arguments))

    assert outcome.data["recovered"] is True
    walks = views(stays)
    report("execution recovered by lookup", walks)
    assert walks["steps"].stays == [
        "tools.pipeline.gateway",
        "tools.pipeline.execution",
        "tools.pipeline.gateway",
    ]
