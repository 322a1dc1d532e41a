"""`POST /api/v1/text/call`: parse a model reply, journal each refusal, run the accepted calls
as one batch and write the next turn's <tool_response> blocks."""

from __future__ import annotations

import json
from typing import Any

from adapters.text.parser import Candidate, parse
from audit.models import Channel
from tools import catalog
from tools.errors import Outcome
from tools.models import Contour
from tools.pipeline import gateway

CHANNEL = Channel.TEXT


def execute(contour: Contour, text: str, *, actor: str) -> dict[str, Any]:
    """Parse a model reply, journal every refused candidate, run the accepted calls as one batch
    (identical ones once) and answer with the `POST /api/v1/text/call` body."""
    # A refusal lists only what the model was shown in <tools>; a known tool it may not call
    # still goes to the core, which answers `forbidden`.
    parsed = parse(
        text,
        catalog.names(),
        listed=[spec.name for spec in gateway.visible_tools(contour, actor=actor)],
    )
    refused: dict[int, Outcome] = {}
    for refusal in parsed.refusals:
        outcome = gateway.reject(
            contour,
            refusal.code,
            refusal.message,
            channel=CHANNEL,
            actor=actor,
            tool=refusal.name or "",
            hint=refusal.hint,
            arguments=refusal.arguments
            if refusal.arguments is not None
            else {"_unparsed_chars": refusal.end - refusal.start},
        )
        # The journal keeps the message; the model also gets the field problems and the data.
        outcome.problems = list(refusal.problems)
        outcome.data = dict(refusal.data)
        refused[refusal.number] = outcome
    calls = parsed.calls
    items = gateway.call_batch(
        contour, [(c.name, c.arguments) for c in calls], channel=CHANNEL, actor=actor
    )
    results: list[dict[str, Any]] = []
    result_of: list[int] = []
    call_rows: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    blocks: dict[int, str] = {}
    for call, item in zip(calls, items, strict=True):
        original = calls[item.duplicate_of] if item.duplicate_of is not None else None
        if original is None or item.duplicate_of is None:  # both or neither
            result_of.append(len(results))
            results.append(item.outcome.as_dict())
            blocks[call.number] = response_block(call.name, results[-1])
        else:
            result_of.append(result_of[item.duplicate_of])
            dropped.append(
                {
                    "number": call.number,
                    "name": call.name,
                    "duplicate_of": original.number,
                    **_where(call),
                }
            )
            blocks[call.number] = response_block(call.name, _duplicate_note(original.number))
        call_rows.append(
            {
                "number": call.number,
                "name": call.name,
                "arguments": call.arguments,
                **_where(call),
                "notes": list(call.notes),
                "duplicate_of": original.number if original is not None else None,
                "result": result_of[-1],
            }
        )
    problems = []
    for refusal in parsed.refusals:
        outcome = refused[refusal.number]
        problems.append(
            {
                "number": refusal.number,
                "reason": refusal.reason,
                "code": refusal.code,
                "message": refusal.message,
                "hint": refusal.hint,
                "name": refusal.name,
                **_where(refusal),
                "problems": [p.as_dict() for p in refusal.problems],
                "journal_id": outcome.journal_id,
            }
        )
        blocks[refusal.number] = response_block(refusal.name, outcome.as_dict())
    return {
        "calls": call_rows,
        "problems": problems,
        "dropped": dropped,
        "results": results,
        "reply": render_reply([blocks[c.number] for c in parsed.candidates]),
    }


def response_block(name: str | None, content: dict[str, Any]) -> str:
    """One result as Hermes writes it: <tool_response> with {"name", "content"} inside."""
    body = json.dumps({"name": name, "content": content}, ensure_ascii=False)
    return f"<tool_response>\n{body}\n</tool_response>"


def render_reply(blocks: list[str]) -> str:
    """The next turn's content (role `user`), as the Qwen template renders consecutive tool
    messages; it starts and ends with the tag, which is how the template recognises it."""
    return "\n".join(blocks)


def _duplicate_note(original: int) -> dict[str, Any]:
    return Outcome(
        status="rejected",
        code="duplicate_call",
        message=f"такой же вызов №{original} в этом ответе уже обработан; повтор не выполнялся",
        hint=f"результат — в ответе на вызов №{original}; не повторяйте вызов",
        data={"duplicate_of": original},
    ).as_dict()


def _where(candidate: Candidate) -> dict[str, int]:
    return {"start": candidate.start, "end": candidate.end, "line": candidate.line}
