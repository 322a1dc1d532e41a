"""Two gateway processes whose clocks are 90 s apart around midnight, Moscow
time, on one PostgreSQL database. Each would count its own day by its own clock (one just
before midnight, one just after) and pass the daily ceiling twice over; the day a ceiling
counts is the database's, in the contour's time zone (tools/pipeline/ceilings.py, tools/clock.py).

The clocks are libfaketime's (Debian), on the uvicorn processes themselves: the offset is read
from a file on every clock read, so the test sets it right before each call, whatever the
machine's load did to the time in between. The monotonic clock is left alone.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from harness.chaos_faults import FAKETIME_LIBRARY
from harness.cluster import Cluster, build, postgres_params, scratch_database
from tests.conftest import order_args

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not Path(FAKETIME_LIBRARY).exists(),
        reason="no libfaketime here (apt-get install libfaketime); CI installs it",
    ),
]

MOSCOW = ZoneInfo("Europe/Moscow")
SLUG = "midnight"
ORDER = 36600  # order_args(): 366,00 ₽
CEILING_ORDERS = 6
# Server a's clock this long before midnight, b's this long after: 90 s apart.
HALF_SKEW = timedelta(seconds=45)


@pytest.fixture(scope="module")
def skewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path, Path]]:
    tmp = tmp_path_factory.mktemp("midnight")
    params = postgres_params()
    with scratch_database(params, "gateway_midnight") as dbname:
        # The sandbox in each gateway's own process: only the gateways' clocks matter here.
        built = build(
            tmp, params, dbname, [SLUG], extra_env={"INVOICEBOX_SANDBOX_IN_PROCESS": "true"}
        )
        clocks = (tmp / "clock-a", tmp / "clock-b")
        for server, clock in zip((built.a, built.b), clocks, strict=True):
            set_clock(clock, "+0s")
            server.env = {
                **server.env,
                "LD_PRELOAD": FAKETIME_LIBRARY,
                "FAKETIME_TIMESTAMP_FILE": str(clock),
                "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            }
        try:
            built.a.start()
            built.b.start()
            yield built, *clocks
        finally:
            built.stop()


def set_clock(clock: Path, offset: str) -> None:
    """The offset a process's libfaketime reads on every clock read, replaced in one step: a
    file written in place is empty for an instant, and a read then sees no offset at all (the
    real day, once in a CI run: b's Date header a day behind its clock)."""
    written = clock.with_suffix(".new")
    written.write_text(f"{offset}\n")
    os.replace(written, clock)


def straddle_midnight(cluster: Cluster, clock_a: Path, clock_b: Path) -> None:
    """Set a's clock 45 s before the next Moscow midnight and b's 45 s after, from now."""
    now = cluster.scalar("select statement_timestamp()").astimezone(UTC)
    local = now.astimezone(MOSCOW)
    midnight = (local + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    offset = (midnight - now).total_seconds()
    set_clock(clock_a, f"{offset - HALF_SKEW.total_seconds():+.0f}s")
    set_clock(clock_b, f"{offset + HALF_SKEW.total_seconds():+.0f}s")


def settle_on_both_sides(cluster: Cluster, clock_a: Path, clock_b: Path) -> None:
    """uvicorn refreshes its Date header about once a second, from its main loop: under load a
    first answer after the clocks moved can still carry the old day. Wait until both do not."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        straddle_midnight(cluster, clock_a, clock_b)
        before = moscow_day(httpx.get(f"{cluster.a.base}/health", timeout=10))
        after = moscow_day(httpx.get(f"{cluster.b.base}/health", timeout=10))
        if before < after:
            return
        time.sleep(0.5)
    raise AssertionError("the gateways' clocks never straddled midnight")


def moscow_day(response: Any) -> str:
    """The day the answering process believes it is (uvicorn's Date header is its clock)."""
    return f"{parsedate_to_datetime(response.headers['date']).astimezone(MOSCOW):%Y-%m-%d}"


def test_two_workers_90_s_apart_around_midnight_count_one_day(skewed: tuple[Cluster, Path, Path]):
    cluster, clock_a, clock_b = skewed
    contour_id = cluster.scalar("select id from tools_contour where slug = %s", SLUG)
    cluster.sql(
        'insert into tools_ceiling (contour_id, kind, currency, "limit") '
        "values (%s, 'per_day', 'RUB', %s)",
        contour_id,
        CEILING_ORDERS * ORDER,
    )
    tokens = []
    for n in range(CEILING_ORDERS + 4):
        args = order_args(description=f"Полночь {n}")
        first = cluster.call(cluster.a, SLUG, "create_order", args)
        assert first.status_code == 200, first.text
        tokens.append({**args, "confirmation_token": first.json()["confirmation"]["token"]})

    codes, days = [], {"a": set(), "b": set()}
    settle_on_both_sides(cluster, clock_a, clock_b)
    for n, confirmed in enumerate(tokens):
        # Alternating: by their own clocks a would stop at the ceiling, b never would (its
        # day has just begun, with nothing spent).
        name, server = ("a", cluster.a) if n % 2 == 0 else ("b", cluster.b)
        straddle_midnight(cluster, clock_a, clock_b)
        response = cluster.call(server, SLUG, "create_order", confirmed)
        days[name].add(moscow_day(response))
        codes.append(response.json()["code"])

    # The skew was real: each process lived in its own day for every call it answered.
    assert len(days["a"]) == len(days["b"]) == 1 and days["a"] != days["b"], days
    assert codes == ["ok"] * CEILING_ORDERS + ["ceiling_exceeded"] * 4, codes
    assert (
        cluster.scalar(
            "select count(*) from invoicebox_sandboxorder where merchant_id = %s",
            uuid.UUID(cluster.contours[SLUG]["merchant_id"]),
        )
        == CEILING_ORDERS
    )
    # The operations carry the database's time: b's own clock would put half in the future.
    assert (
        cluster.scalar(
            "select count(*) from tools_operation where created_at > "
            "statement_timestamp() or started_at > statement_timestamp()"
        )
        == 0
    )
