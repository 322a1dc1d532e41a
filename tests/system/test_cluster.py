"""Guarantees across processes: two gateway processes, a sandbox process, a live Celery worker on
Redis, one PostgreSQL database. Races, faults over real HTTP, a killed worker, notifications."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.cluster import Cluster, Server, build, postgres_params, scratch_database
from invoicebox.limits import account_key
from tests.conftest import order_args

pytestmark = [pytest.mark.postgres]

SLUGS = [
    "race",
    "first",
    "ceiling",
    "kill",
    "notify",
    "refresh",
    "expire",
    "f-latency",
    "f-5xx",
    "f-503",
    "f-reset",
    "f-lost",
    "f-429",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    params = postgres_params()
    with scratch_database(params, "gateway_cluster") as dbname:
        built = build(tmp_path_factory.mktemp("cluster"), params, dbname, SLUGS)
        try:
            for server in (built.sandbox, built.a, built.b):
                server.start()
            built.start_worker()
            yield built
        finally:
            built.stop()


def wait_for(check: Callable[[], Any], seconds: float = 30, what: str = "condition") -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def prepare(cluster: Cluster, slug: str, **changes: Any) -> dict[str, Any]:
    args = order_args(**changes)
    first = cluster.call(cluster.a, slug, "create_order", args)
    assert first.status_code == 200, first.text
    return {**args, "confirmation_token": first.json()["confirmation"]["token"]}


def concurrently(count: int, work: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(count)

    def run(index: int) -> Any:
        barrier.wait()
        return work(index)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def journal_count(cluster: Cluster, slug: str, phase: str) -> int:
    return cluster.scalar(
        "select count(*) from audit_journalentry where contour = %s and phase = %s", slug, phase
    )


def test_fifty_executions_of_one_token_from_two_processes_create_one_order(cluster: Cluster):
    confirmed = prepare(cluster, "race")
    # The winner holds its upstream call long enough for every loser to arrive meanwhile.
    cluster.set_faults("race", latency_ms=1500)

    def execute(index: int) -> tuple[int, dict[str, Any], int]:
        server = cluster.a if index % 2 else cluster.b
        busy = 0
        for _ in range(300):
            response = cluster.call(server, "race", "create_order", confirmed)
            body = response.json()
            # A loser that arrives while the winner executes gets 409 duplicate_call: it waits
            # and repeats the same call, as the hint says, until it sees the replay.
            if response.status_code == 409 and body["code"] == "duplicate_call":
                busy += 1
                time.sleep(0.2)
                continue
            return response.status_code, body, busy
        raise AssertionError("never got past duplicate_call")

    results = concurrently(50, execute)
    cluster.set_faults("race")

    assert {status for status, _, _ in results} == {200}, [b for s, b, _ in results if s != 200]
    assert Counter(body["replayed"] for _, body, _ in results) == {True: 49, False: 1}, [
        (b["message"], b["data"].get("recovered"), busy)
        for _, b, busy in results
        if not b["replayed"]
    ]
    assert len({body["data"]["order_id"] for _, body, _ in results}) == 1
    assert cluster.upstream_orders("race") == 1
    assert cluster.sql(
        "select state, attempts from tools_operation o join tools_contour c on "
        "c.id = o.contour_id where c.slug = 'race'"
    ) == [("done", 1)]
    # Every request, 409s included, has its journal entry; the one attempt also its started one.
    assert journal_count(cluster, "race", "execute") == 50 + sum(b for _, _, b in results) + 1
    assert sum(b for _, _, b in results) > 0  # the race really happened


def test_fifty_identical_first_calls_from_two_processes_make_one_confirmation(cluster: Cluster):
    args = order_args()

    def first_call(index: int) -> httpx.Response:
        return cluster.call(cluster.a if index % 2 else cluster.b, "first", "create_order", args)

    responses = concurrently(50, first_call)

    assert {r.status_code for r in responses} == {200}
    assert len({r.json()["confirmation"]["token"] for r in responses}) == 1
    assert (
        cluster.scalar(
            "select count(*) from tools_pendingconfirmation p join tools_contour c "
            "on c.id = p.contour_id where c.slug = 'first'"
        )
        == 1
    )
    assert journal_count(cluster, "first", "prepare") == 50


def test_writes_racing_one_daily_ceiling_from_two_processes_never_pass_it(cluster: Cluster):
    contour_id = cluster.scalar("select id from tools_contour where slug = 'ceiling'")
    cluster.sql(
        'insert into tools_ceiling (contour_id, kind, currency, "limit") '
        "values (%s, 'per_day', 'RUB', 73200) returning id",
        contour_id,
    )
    confirmed = [prepare(cluster, "ceiling", description=f"Счёт {n}") for n in range(6)]
    cluster.set_faults("ceiling", latency_ms=300)

    def execute(index: int) -> str:
        server = cluster.a if index % 2 else cluster.b
        for _ in range(100):
            body = cluster.call(server, "ceiling", "create_order", confirmed[index]).json()
            if body["code"] != "duplicate_call":
                return body["code"]
            time.sleep(0.2)
        raise AssertionError("never got past duplicate_call")

    codes = concurrently(len(confirmed), execute)
    cluster.set_faults("ceiling")

    assert Counter(codes) == {"ok": 2, "ceiling_exceeded": 4}  # 2 × 366,00 ₽ = the ceiling
    assert cluster.upstream_orders("ceiling") == 2
    assert (
        cluster.scalar(
            "select coalesce(sum(amount), 0) from tools_operation where "
            "contour_id = %s and state = 'done'",
            contour_id,
        )
        == 73200
    )


# fault -> (switches, whether the order lands upstream despite the fault). Every one of them
# leaves a create whose outcome the gateway cannot know: 504 outcome_unknown, never `failed`
# (API.md's error table; tools/pipeline/execution.py). A 429 is the upstream's refusal before it
# stored anything, so it is the one definite failure.
HTTP_FAULTS: dict[str, tuple[dict[str, Any], bool]] = {
    "f-latency": ({"latency_ms": 5500}, True),
    "f-5xx": ({"error_rate": 1.0}, False),
    "f-503": ({"fail_next": 1}, False),
    "f-reset": ({"reset_next": 1}, False),
    "f-lost": ({"drop_response_after_create": True}, True),
}


@pytest.mark.parametrize("slug", list(HTTP_FAULTS))
def test_upstream_faults_over_http_never_duplicate_and_lose_no_entry(cluster: Cluster, slug: str):
    switches, landed = HTTP_FAULTS[slug]
    confirmed = prepare(cluster, slug)
    cluster.set_faults(slug, **switches)

    failed = cluster.call(cluster.a, slug, "create_order", confirmed)
    cluster.set_faults(slug)
    if landed:  # a slow upstream finishes the create after the client gave up on it
        wait_for(lambda: cluster.upstream_orders(slug) == 1, what="the slow create")
    posts_after_fault = create_posts(cluster, slug)
    assert operation_states(cluster, slug) == ["unknown"]  # never `failed`
    codes = ["confirmation_required", "execution_started", "outcome_unknown"]
    if not landed:
        # Nothing upstream yet, but the lost request could still land: the gateway looks it
        # up, sends nothing and says when to come back (the stale period, 60 s here).
        too_early = cluster.call(cluster.b, slug, "create_order", confirmed)
        assert (too_early.status_code, too_early.json()["code"]) == (504, "outcome_unknown")
        assert too_early.json()["data"]["retry_after_seconds"] > 0
        assert create_posts(cluster, slug) == 0
        codes += ["execution_started", "outcome_unknown"]
        age_operation(cluster, slug)  # the wait the answer asked for
    retried = cluster.call(cluster.b, slug, "create_order", confirmed)
    replayed = cluster.call(cluster.a, slug, "create_order", confirmed)

    assert (failed.status_code, failed.json()["code"]) == (504, "outcome_unknown"), failed.text
    assert posts_after_fault == (1 if landed else 0)
    assert retried.status_code == 200, retried.text
    assert retried.json()["data"].get("recovered", False) is landed
    assert replayed.json()["replayed"] is True
    assert replayed.json()["data"]["order_id"] == retried.json()["data"]["order_id"]
    assert cluster.upstream_orders(slug) == 1
    assert create_posts(cluster, slug) == 1  # one create reached the upstream, ever
    assert operation_states(cluster, slug) == ["done"]
    # Each attempt journals that it started before its upstream request; the replay claims none.
    assert journal_codes(cluster, slug) == [*codes, "execution_started", "ok", "ok"]


def test_a_429_on_a_create_is_a_refusal_and_the_same_token_creates_once(cluster: Cluster):
    slug = "f-429"
    confirmed = prepare(cluster, slug)
    cluster.set_faults(slug, rate_limit_next=1)

    limited = cluster.call(cluster.a, slug, "create_order", confirmed)
    retried = cluster.call(cluster.b, slug, "create_order", confirmed)
    replayed = cluster.call(cluster.a, slug, "create_order", confirmed)

    assert (limited.status_code, limited.json()["code"]) == (429, "rate_limited"), limited.text
    assert retried.status_code == 200, retried.text
    assert replayed.json()["replayed"] is True
    assert cluster.upstream_orders(slug) == 1
    assert create_posts(cluster, slug) == 1
    assert journal_codes(cluster, slug) == [
        "confirmation_required",
        "execution_started",
        "rate_limited",
        "execution_started",
        "ok",
        "ok",
    ]


def create_posts(cluster: Cluster, slug: str) -> int:
    """Creates of the contour that reached the upstream's store: each merchantOrderId taken,
    plus the creates it refused because that number was already taken (a second POST of one
    order). The sandbox's 5xx, 429 and reset faults answer in front of the store, as a proxy
    would: those POSTs never reach it."""
    return cluster.scalar(
        "select count(*) + coalesce(sum(repeated_creates), 0) "
        "from invoicebox_sandboxmerchantorderid where merchant_id = %s",
        uuid.UUID(cluster.contours[slug]["merchant_id"]),
    )


def age_operation(cluster: Cluster, slug: str) -> None:
    """Move the contour's operation back past the stale period (60 s): the wait itself."""
    cluster.sql(
        "update tools_operation set started_at = started_at - interval '1 hour' "
        "where contour_id = (select id from tools_contour where slug = %s)",
        slug,
    )


def operation_states(cluster: Cluster, slug: str) -> list[str]:
    return [
        row[0]
        for row in cluster.sql(
            "select state from tools_operation o join tools_contour c on c.id = o.contour_id "
            "where c.slug = %s",
            slug,
        )
    ]


def journal_codes(cluster: Cluster, slug: str) -> list[str]:
    return [
        row[0]
        for row in cluster.sql(
            "select code from audit_journalentry where contour = %s order by id", slug
        )
    ]


def test_a_sandbox_payment_notifies_over_http_and_the_worker_confirms_it(cluster: Cluster):
    order = issue(cluster, "notify")

    paid = cluster.sandbox_request("POST", f"/_sandbox/pay/{order['order_id']}", "notify")

    assert paid.status_code == 200, paid.text
    delivery = paid.json()["notification"]
    assert delivery["answer"] == {"status": "success"}
    assert delivery["in_process"] is False  # another process: real HTTP, signed
    assert delivery["url"] == f"{cluster.a.base}/invoicebox/notifications/notify"
    assert tracked_status(cluster, order["order_id"]) == "completed"
    # The live Celery worker (Redis) read the order back upstream after commit.
    wait_for(
        lambda: cluster.sql(
            "select 1 from audit_journalentry where contour = 'notify' and "
            "channel = 'celery' and code = 'notification_confirmed'"
        ),
        what="the worker's confirmation",
    )
    again = cluster.manage("sandbox_pay", order["order_id"], "--resend")
    assert '"status": "success"' in again
    assert (
        cluster.scalar(
            "select count(*) from tools_processednotification n join "
            "tools_contour c on c.id = n.contour_id where c.slug = 'notify'"
        )
        == 1
    )


def test_the_worker_refreshes_open_orders_queued_by_beat(cluster: Cluster):
    order = issue(cluster, "refresh")
    cluster.manage("sandbox_pay", order["order_id"], "--no-notify")

    cluster.send_task("tools.tasks.refresh_open_orders")

    wait_for(
        lambda: tracked_status(cluster, order["order_id"]) == "completed",
        what="the refreshed status",
    )
    # The task commits the status, then journals it: on a loaded machine the test can look
    # in between, so it waits for the entry too, then checks there is exactly one.
    wait_for(lambda: refreshed_entries(cluster) >= 1, what="the refresh's journal entry")
    assert refreshed_entries(cluster) == 1


def test_the_worker_expires_stale_confirmations(cluster: Cluster):
    prepare(cluster, "expire")
    cluster.sql(
        "update tools_pendingconfirmation set expires_at = now() - interval '1 second' "
        "where contour_id = (select id from tools_contour where slug = 'expire')"
    )

    cluster.send_task("tools.tasks.expire_confirmations")

    wait_for(
        lambda: cluster.sql(
            "select 1 from tools_pendingconfirmation p join tools_contour c on c.id = p.contour_id "
            "where c.slug = 'expire' and p.status = 'expired'"
        ),
        what="the expiry",
    )


def test_a_worker_killed_mid_execution_is_recovered_not_repeated(cluster: Cluster, tmp_path: Path):
    confirmed = prepare(cluster, "kill")
    # Longer than the kill takes, shorter than the client timeout: the call is in flight.
    cluster.set_faults("kill", latency_ms=3000)
    victim = Server("victim", cluster.a.port, cluster.a.env, tmp_path / "victim.log")
    # The restarted process treats an in-flight claim older than 30 s as lost (60 s by default,
    # which B keeps); the same setting is how production shortens or lengthens it. Longer than
    # a restart takes on a loaded machine, so only the moved clock below makes the claim stale.
    restarted = Server(
        "restarted",
        cluster.a.port,
        {**cluster.a.env, "GATEWAY_STALE_IN_FLIGHT_SECONDS": "30"},
        tmp_path / "restarted.log",
    )
    errors: list[BaseException] = []

    def doomed() -> None:
        try:
            cluster.call(victim, "kill", "create_order", confirmed)
        except httpx.HTTPError as error:
            errors.append(error)

    cluster.a.stop()
    try:
        victim.start()
        thread = threading.Thread(target=doomed)
        thread.start()
        # Not the operation row: a fresh process needs 50-200 ms after committing it before
        # the request leaves, and a kill inside that gap leaves nothing upstream. The limiter
        # counts the request right before sending it; then a margin for the bytes to arrive.
        wait_for(lambda: requests_sent(cluster, "kill") >= 1, what="the upstream request")
        time.sleep(0.5)
        victim.kill()
        thread.join(timeout=10)
        # The sandbox got the request before the kill: the order lands upstream regardless.
        wait_for(lambda: cluster.upstream_orders("kill") == 1, what="the upstream order")
        cluster.set_faults("kill")
        too_early = cluster.call(cluster.b, "kill", "create_order", confirmed)
        restarted.start()  # "on restart"
        try:
            # Past the restarted process's stale age without waiting it out: the claim is made
            # older on the clock that judges it (the database's), as the expiry test above does.
            cluster.sql(
                "update tools_operation set started_at = started_at - interval '31 seconds' "
                "where contour_id = (select id from tools_contour where slug = 'kill')"
            )
            recovered = cluster.call(restarted, "kill", "create_order", confirmed)
            replayed = cluster.call(cluster.b, "kill", "create_order", confirmed)
        finally:
            restarted.stop()
    finally:
        victim.stop()
        cluster.a.start()  # whatever happened, the other tests get worker A back

    assert errors, "the killed server answered"
    assert (too_early.status_code, too_early.json()["code"]) == (409, "duplicate_call")
    assert recovered.status_code == 200, recovered.text
    assert recovered.json()["data"]["recovered"] is True
    assert replayed.json()["replayed"] is True
    assert cluster.upstream_orders("kill") == 1
    assert cluster.sql(
        "select state, attempts from tools_operation o join tools_contour c on "
        "c.id = o.contour_id where c.slug = 'kill'"
    ) == [("done", 2)]


def requests_sent(cluster: Cluster, slug: str) -> int:
    """Upstream requests of the contour's account, as the gateways' shared limiter counted them."""
    return cluster.scalar(
        "select coalesce(sum(count), 0) from invoicebox_upstreamwindow where account = %s",
        account_key(cluster.contours[slug]["token"]),
    )


def issue(cluster: Cluster, slug: str) -> dict[str, Any]:
    confirmed = prepare(cluster, slug)
    done = cluster.call(cluster.a, slug, "create_order", confirmed)
    assert done.status_code == 200, done.text
    return done.json()["data"]


def refreshed_entries(cluster: Cluster) -> int:
    return cluster.scalar(
        "select count(*) from audit_journalentry where contour = 'refresh' "
        "and code = 'status_refreshed'"
    )


def tracked_status(cluster: Cluster, order_id: str) -> str:
    return cluster.scalar("select status from tools_trackedorder where order_id = %s", order_id)
