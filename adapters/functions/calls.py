"""Shared by the platform adapters: read a platform message with pydantic, refuse a malformed one."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tools.errors import Outcome, Problem
from tools.models import Contour
from tools.pipeline import gateway
from tools.validation import problems_from

M = TypeVar("M", bound=BaseModel)


class Reply(NamedTuple):
    """What a call view answers: the HTTP status and the platform-shaped body."""

    status: int
    body: Any


class PlatformModel(BaseModel):
    """A platform's message: fields we don't use (ids, logprobs, usage) are tolerated."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Malformed(Exception):
    """The platform message itself is unusable; no tool call can be read from it."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.field} — {p.message}" for p in problems))
        self.problems = problems


def read(model: type[M], body: Any) -> M:
    if not isinstance(body, dict):
        raise Malformed([Problem("message", "ожидается объект: сообщение ассистента целиком")])
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise Malformed(problems_from(error, model)) from None


def refuse(
    contour: Contour, malformed: Malformed, *, platform: str, channel: str, actor: str, body: Any
) -> Reply:
    """A 400 with the envelope, journaled like any refusal."""
    outcome = gateway.reject(
        contour,
        "invalid_arguments",
        f"сообщение {platform} не разобрано: {malformed}"[:500],
        channel=channel,
        actor=actor,
        # Only the shape: raw platform text may carry a confirmation token in a JSON string.
        arguments={"_keys": sorted(map(str, body))[:20]}
        if isinstance(body, dict)
        else {"_type": type(body).__name__},
        hint=f"передайте сообщение ассистента из ответа {platform} целиком, без изменений",
    )
    # reject() journals the message only; the per-field problems go to the caller as well.
    outcome.problems = malformed.problems
    return Reply(outcome.http_status, outcome.as_dict())


def as_text(outcome: Outcome) -> str:
    return json.dumps(outcome.as_dict(), ensure_ascii=False)
