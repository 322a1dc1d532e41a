"""tools.pipeline.call_trace: the journal entries of one call. An answer's entry and where the
answer says it is (recorded, pending in the spool, kept nowhere), an attempt's entry, arguments
that are no object, and the duration, measured on the moved clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit import spool
from audit.models import JournalEntry
from tests.conftest import Clock
from tests.tools.pipeline.test_database_faults import database_down
from tools.errors import JournalState, Outcome
from tools.models import Contour, Operation
from tools.pipeline.call_trace import Trace, journal_outcome, journal_started, unjournaled


@pytest.fixture(autouse=True)
def _spool_here(settings: Any, tmp_path: Path) -> None:
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def trace_of(contour: Contour, **changes: Any) -> Trace:
    given: dict[str, Any] = {
        "contour": contour,
        "channel": "rest",
        "actor": "key:ibg_test",
        "tool": "get_order",
        "arguments": {"order_id": "o-1"},
    }
    return Trace(**{**given, **changes})


def ok() -> Outcome:
    return Outcome(status="ok", code="ok", message="Готово.")


@pytest.mark.django_db
def test_an_answer_is_journaled_as_traced_with_its_duration(contour: Contour, clock: Clock):
    trace = trace_of(contour, phase="read", upstream_request_id="req-1", upstream_status=200)
    clock.advance(2.5)

    outcome = journal_outcome(trace, ok(), note=" (заметка журнала)")

    assert (outcome.journal_state, outcome.message) == (JournalState.RECORDED, "Готово.")
    entry = JournalEntry.objects.get(pk=outcome.journal_id)
    assert (entry.contour, entry.channel, entry.actor, entry.tool, entry.phase) == (
        "acme",
        "rest",
        "key:ibg_test",
        "get_order",
        "read",
    )
    assert (entry.status, entry.code, entry.message) == ("ok", "ok", "Готово. (заметка журнала)")
    assert (entry.upstream_request_id, entry.upstream_status) == ("req-1", 200)
    assert entry.arguments == {"order_id": "o-1"}
    assert 2_500 <= entry.duration_ms < 60_000


@pytest.mark.django_db
def test_arguments_that_are_no_object_are_kept_printable_and_short(contour: Contour):
    trace = trace_of(contour, arguments="[1, 2\x00" + "x" * 500)

    entry = JournalEntry.objects.get(pk=journal_outcome(trace, ok()).journal_id)

    (raw,) = entry.arguments.values()
    assert list(entry.arguments) == ["_raw"] and "\x00" not in raw and len(raw) <= 200


@pytest.mark.django_db
def test_an_attempt_is_journaled_as_started_with_its_number(contour: Contour):
    trace = trace_of(contour, tool="create_order", confirmation_id="c-1")

    journal_started(trace, Operation(key="op-1", attempts=2))

    entry = JournalEntry.objects.get()
    assert (entry.phase, entry.status, entry.code) == ("execute", "started", "execution_started")
    assert (entry.operation_key, entry.confirmation_id) == ("op-1", "c-1")
    assert "попытка 2" in entry.message


@pytest.mark.django_db(transaction=True)
def test_with_the_database_away_the_answer_says_its_entry_is_pending(contour: Contour):
    with database_down():
        outcome = journal_outcome(trace_of(contour), ok())

    assert outcome.journal_state == JournalState.PENDING and outcome.journal_id is None
    assert outcome.journal_pending and spool.pending() == 1


def test_a_refusal_no_place_journaled_is_refused_as_journal_unavailable():
    refused = Outcome(status="rejected", code="not_found", message="Нет такого счёта.")

    outcome = unjournaled(refused)

    assert (outcome.status, outcome.code, outcome.http_status) == (
        "error",
        "journal_unavailable",
        503,
    )
    assert outcome.data["refused_code"] == "not_found" and "Нет такого счёта." in outcome.message
    assert outcome.journal_state == JournalState.UNAVAILABLE


@pytest.mark.parametrize(
    "answer",
    [
        Outcome(status="ok", code="ok", message="Готово."),
        Outcome(status="error", code="outcome_unknown", message="Неизвестно, дошло ли."),
    ],
    ids=["a result", "an unknown outcome"],
)
def test_an_answer_that_reached_the_upstream_keeps_its_code_without_an_entry(answer: Outcome):
    code = answer.code

    outcome = unjournaled(answer)

    assert (outcome.code, outcome.journal_state) == (code, JournalState.UNAVAILABLE)
    assert "refused_code" not in outcome.data
