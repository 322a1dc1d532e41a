"""ToolSpec: each tool described once; every adapter derives its own form from it."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from tools.errors import Problem

if TYPE_CHECKING:
    from invoicebox.client import InvoiceboxClient
    from tools.models import Contour

Kind = Literal["read", "write", "money"]


@dataclass(frozen=True)
class Example:
    """A Russian request and the arguments it should become (GigaChat's few_shot_examples)."""

    request: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Counted:
    """The success phrase of a read that lists: "Найдено по запросу: 3 счёта." """

    key: str  # the list in the tool's data
    one: str
    few: str
    many: str
    nothing: str  # said when the list is empty


# Fields of write tools that steer the pipeline and are not part of what is being done.
CONTROL_FIELDS = frozenset({"confirmation_token", "confirm_amount", "allow_duplicate"})


@dataclass(frozen=True)
class ChangedOrder:
    """An order that exists already and that a write changes: what approval weighs for it."""

    merchant_order_id: str
    amount: int
    currency: str


@dataclass(frozen=True)
class Summary:
    """What a human confirms: a Russian text plus the same facts as data."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # What the write weighs against ceilings and the approval threshold (None: no amount).
    amount: int | None = None
    currency: str | None = None
    # Why this particular write needs an operator whatever the contour's policy (for example a
    # cancellation that returns held money); '' when the policy alone decides.
    operator_reason: str = ""
    # The existing order the write changes (update_order): tools.pipeline.approvals.requirement weighs
    # its amount and how it was approved when it was created.
    changes: ChangedOrder | None = None
    # The upstream facts the text shows (tools/pipeline/facts.py): kept on the confirmation, read again
    # before the first execution; a difference means a new summary and token, not a send.
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class CallContext:
    """What a handler may use: the contour, its upstream client, the minted ids of this call."""

    contour: Contour
    client: InvoiceboxClient
    merchant_order_id: str = ""
    operation_key: str = ""
    # When the operation was first claimed: recovery looks for effects created after it.
    operation_started: datetime | None = None
    # Only an operator in the web UI approves (tools.pipeline.approvals.decide); a handler whose effect
    # depends on the upstream state at execution re-checks what it needed against this.
    operator_approved: bool = False


Handler = Callable[[CallContext, Any], dict[str, Any]]
Checker = Callable[[Any, "Contour"], list[Problem]]
Summarizer = Callable[[CallContext, Any], Summary]
Recoverer = Callable[[CallContext, Any], "dict[str, Any] | None"]
# A recoverer that read the upstream but cannot tell whether the effect is there raises
# ToolError("outcome_unknown", data={"lookup": NOT_PROVEN}): never "absent" (None) by default.
NOT_PROVEN = "not_proven"
# Where a confirmation keeps its summary's upstream facts (PendingConfirmation.summary_data).
FACTS_KEY = "upstream_facts"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    kind: Kind
    toolset: Literal["read", "write", "refund"]
    params: type[BaseModel]
    handler: Handler
    description_ru: str
    summary_ru: str
    # What the core says when a call succeeds, as a person would write it: a sentence, or for a
    # read that lists, how to count what it found (tools/phrases.py).
    success_ru: str | Counted
    check: Checker | None = None
    summarize: Summarizer | None = None
    # After an unknown outcome: find the effect upstream (result) or prove it absent (None).
    recover: Recoverer | None = None
    destructive: bool = False
    idempotent: bool = True
    examples_ru: tuple[Example, ...] = ()

    def __post_init__(self) -> None:
        if self.writes and not isinstance(self.success_ru, str):
            raise ValueError(f"{self.name}: a write's success_ru is one sentence, not a count")

    @property
    def writes(self) -> bool:
        return self.kind in ("write", "money")

    @property
    def always_needs_operator(self) -> bool:
        """Money leaving the merchant: no contour policy lets a chat confirmation do it, and
        nothing stored on a confirmation can waive it (tools/pipeline/approvals.py)."""
        return self.kind == "money"

    def canonical_arguments(self, params: BaseModel) -> dict[str, Any]:
        """Defaults applied, control fields dropped, JSON-ready, every text in NFC: what a token
        and the duplicate protection are bound to. The model already made ids canonical
        (UUIDs lower-case with hyphens) and refused non-ASCII digits."""
        dumped = params.model_dump(mode="json", exclude=set(CONTROL_FIELDS), exclude_none=True)
        return _nfc(dumped)


def _nfc(value: Any) -> Any:
    """ "й" typed as one code point or as "и" + a combining breve is the same text."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {_nfc(key): _nfc(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nfc(item) for item in value]
    return value
