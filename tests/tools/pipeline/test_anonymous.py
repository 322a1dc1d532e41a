"""tools.pipeline.anonymous: how the journal names a caller with no verified credential, and the
sampling of their refusals (one entry per door, reason and period), the clock moved, never slept."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Clock
from tools.pipeline import anonymous

PERIOD = 60


@pytest.fixture
def sampled(settings: Any) -> None:
    settings.GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS = PERIOD
    anonymous.forget()


def test_an_unverified_credential_is_named_by_a_keyed_hash_never_by_itself():
    secret = "ibg_AbCdEf0123456789-secret"

    named = anonymous.actor_of_unverified(f"Bearer {secret}")

    assert named.startswith("anonymous cred:") and len(named.split(":", 1)[1]) == 12
    assert secret not in named and secret[:8] not in named
    assert anonymous.actor_of_unverified(f"Bearer {secret}") == named
    assert anonymous.actor_of_unverified("Bearer ibg_another") != named
    assert anonymous.actor_of_unverified("") == anonymous.actor_of_unverified("  ") == "anonymous"
    assert anonymous.is_anonymous(named) and anonymous.is_anonymous("anonymous")
    assert not anonymous.is_anonymous("key:ibg_AbCdEf") and not anonymous.is_anonymous("anonymousx")


def refused(channel: str, door: str, code: str, *, kept: bool = True) -> int | None:
    """One refusal as the pipeline makes it: admit(), and a sample it lets through is settled
    as kept in the journal (or not, when no place could take it)."""
    skipped = anonymous.admit(channel, door, code)
    if skipped is not None:
        anonymous.settle(channel, door, code, kept=kept, skipped=skipped)
    return skipped


def test_one_sample_per_door_and_reason_per_period_counting_the_rest(sampled: None, clock: Clock):
    # given: a sample journaled for a door and reason
    assert refused("rest", "/api/v1/call", "unauthorized") == 0

    # when: more refusals inside the period, at the same door, another door, another reason
    inside = [refused("rest", "/api/v1/call", "unauthorized") for _ in range(3)]
    other_door = refused("rest", "/api/v1/tools", "unauthorized")
    other_reason = refused("rest", "/api/v1/call", "database_unavailable")
    clock.advance(PERIOD - 1)
    still_inside = refused("rest", "/api/v1/call", "unauthorized")
    clock.advance(1)
    next_sample = refused("rest", "/api/v1/call", "unauthorized")

    # then: only counted inside; the next sample says how many it stands for
    assert inside == [None, None, None] and still_inside is None
    assert (other_door, other_reason) == (0, 0)
    assert next_sample == 4
    assert refused("rest", "/api/v1/call", "unauthorized") is None


def test_a_sample_no_place_kept_leaves_the_next_refusal_journaled_itself(sampled: None):
    # given: a sample the journal and its spool could not take
    assert refused("mcp", "/mcp", "database_unavailable", kept=False) == 0

    # then: the next refusal is no `sampled` answer for a missing entry: it is a sample itself,
    # standing for the one lost
    assert refused("mcp", "/mcp", "database_unavailable") == 1
    assert refused("mcp", "/mcp", "database_unavailable") is None


def test_past_the_cap_new_doors_share_one_window_until_old_ones_expire(sampled: None, clock: Clock):
    # given: as many distinct doors as there may be windows
    for n in range(anonymous.MAX_WINDOWS):
        assert refused("rest", f"/x/{n}", "not_found") == 0

    # when: two more doors inside the period
    first, second = (
        refused("rest", "/y/1", "not_found"),
        refused("rest", "/y/2", "not_found"),
    )
    # then: they share one window (the second is only counted)
    assert (first, second) == (0, None)

    # when: the period passes: expired windows make room, so a new door has its own again
    clock.advance(PERIOD)
    assert refused("rest", "/z/1", "not_found") == 0
    assert refused("rest", "/z/2", "not_found") == 0
    assert refused("rest", "/z/1", "not_found") is None


def test_a_period_of_zero_journals_every_refusal(settings: Any):
    settings.GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS = 0

    assert [anonymous.admit("mcp", "/mcp", "unauthorized") for _ in range(3)] == [0, 0, 0]
