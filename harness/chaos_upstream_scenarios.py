"""The scenarios of issue 39.5 that make the upstream lie (harness/chaos_scenarios.py runs
them): lists that repeat their rows or page in a loop, and an order changed upstream between a
write's summary and its execution. Each judges what the gateway answered against the truth:
the same read in calm, and the sandbox's own rows."""

# Seeded generators on purpose (a run is reproducible by seed).
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.chaos import Answer
    from harness.chaos_scenarios import Row, Scenarios

LIST_SWITCHES = {"list_repeats": {"repeat_rows": True}, "list_loop": {"loop_pages": True}}
# The figures of a read that an ok answer under a list fault must repeat exactly (the same
# read in calm says them), and the rows whose ids must not repeat nor outnumber calm's.
FIGURES = ("total_count", "refunded_amount", "available_amount", "amount", "status")
# The most specific first: a shipment's row names its order too.
ROW_IDS = ("shipment_id", "refund_id", "order_id", "inn", "sku")


# -- b. lists that repeat their rows or loop ----------------------------------------------


def list_setup(sc: Scenarios) -> dict[str, Any]:
    """Orders, one paid with three shipments and three refunds; each read's answer in calm."""
    if sc.lists_setup is not None:
        return sc.lists_setup
    from harness.chaos import MAIN

    orders = [sc.pursue(sc.intent("lists")) for _ in range(3)]
    paid = orders[0]
    answer = sc.cluster.sandbox_request("POST", f"/_sandbox/pay/{paid}", MAIN, {})
    assert answer.status_code == 200, answer.text
    # Three of each: more than the stuck pager's page (sandbox/listing.py LOOP_PAGE_SIZE).
    for _ in range(3):
        args = {"order_id": paid, "basket_items": [ONE_ROOM], "allow_duplicate": True}
        asked = sc.call("create_shipment", args, "prepare")
        sc.call("create_shipment", {**args, "confirmation_token": asked.token}, "execute")
    for n in range(3):
        made = sc.cluster.sandbox_request(
            "POST", "/billing/api/order/refund-order", MAIN, refund_body(paid, n)
        )
        assert made.status_code in (200, 201), made.text
    reads = [
        ("find_orders", {"page_size": 5}),
        ("find_orders", {"page": 1, "page_size": 2}),
        ("find_orders", {"page": 2, "page_size": 2}),
        ("get_order", {"order_id": paid}),
        ("find_shipments", {"order_id": paid}),
        ("find_refunds", {"order_id": paid}),
        ("get_refundable", {"order_id": paid}),
        ("lookup_company_by_inn", {"inn": "7710044140"}),
    ]
    calm = {}
    for name, args in reads:
        answer = sc.call(name, args)
        assert answer.code == "ok", (name, answer.code, answer.data)
        calm[name + repr(args)] = answer.data
    sc.lists_setup = {"reads": reads, "calm": calm}
    return sc.lists_setup


def lists(sc: Scenarios, row: Row) -> None:
    from harness.chaos import MAIN

    setup = list_setup(sc)
    sc.cluster.set_faults(MAIN, **LIST_SWITCHES[row.fault])
    started = time.monotonic()
    try:
        cycle: list[tuple[str, dict[str, Any]]] = []
        cycles = 0
        # Every read at least once however slow the host, then on until the time is up.
        while cycle or time.monotonic() < started + sc.seconds or cycles == 0:
            if not cycle:  # every read in turn, in a seeded order
                cycle = list(setup["reads"])
                sc.rng.shuffle(cycle)
                cycles += 1
            name, args = cycle.pop()
            answer = sc.call(name, args)
            calm = setup["calm"][name + repr(args)]
            for problem in inflated(calm, answer):
                row.anomalies.append({"anomaly": "list_inflated", "tool": name, **problem})
            if answer.code == "ok" and args.get("page", 1) > 1:
                first = setup["calm"][name + repr({**args, "page": 1})]
                if row_ids(answer.data) & row_ids(first):
                    # Not inflated within the answer; an assistant paging through would
                    # see these rows twice. A single-page read cannot tell (docs: left open).
                    row.notes["page_repeats_page_1"] = row.notes.get("page_repeats_page_1", 0) + 1
    finally:
        sc.cluster.set_faults(MAIN)
        ended = time.monotonic()
    sc.window(row, started, ended)
    # Settled when every read answers as in calm again.
    for name, args in setup["reads"]:
        answer = sc.call(name, args)
        if answer.code != "ok":
            row.anomalies.append({"anomaly": "list_not_back", "tool": name, "code": answer.code})
    row.settle_seconds = time.monotonic() - ended


# -- c. the order changed upstream between summary and execution --------------------------


def facts(sc: Scenarios, row: Row) -> None:
    from harness.chaos import MAIN

    for tool in ("cancel_order", "update_order", "cancel_order"):
        order_id = sc.pursue(sc.intent("facts"))
        args: dict[str, Any] = {"order_id": order_id}
        if tool == "update_order":
            args["description"] = f"Изменённый сценарием {sc.numbered}"
        asked = sc.call(tool, args, "prepare")
        assert asked.code == "confirmation_required", (tool, asked.code, asked.data)
        roubles = sc.rng.randint(400, 999)
        changed = sc.cluster.sandbox_request(
            "PUT", f"/billing/api/order/order/{order_id}", MAIN, new_amount(roubles)
        )
        assert changed.status_code == 200, changed.text
        started = time.monotonic()
        stale = sc.call(tool, {**args, "confirmation_token": asked.token}, "execute")
        again = sc.call(tool, {**args, "confirmation_token": asked.token}, "execute")
        ended = time.monotonic()
        sc.window(row, started, ended)
        status, amount = sc.cluster.sandbox_sql(
            "select status, amount from invoicebox_sandboxorder where order_id = %s::uuid",
            order_id,
        )[0]
        if not (
            stale.code == "confirmation_required"
            and stale.data.get("facts_changed")
            and stale.token
            and stale.token != asked.token
        ):
            row.anomalies.append(
                {"anomaly": "changed_facts_executed", "tool": tool, "code": stale.code}
            )
        if again.code == "ok":
            row.anomalies.append({"anomaly": "old_token_executed", "tool": tool})
        if status != "created" or int(amount) != roubles:
            row.anomalies.append(
                {
                    "anomaly": "order_touched",
                    "tool": tool,
                    "status": status,
                    "amount": str(amount),
                }
            )
        for _, method, path in sc.posts.writes_between(started, ended):
            row.anomalies.append({"anomaly": "write_on_changed_facts", "request": method + path})
        if stale.token:
            done = sc.call(tool, {**args, "confirmation_token": stale.token}, "execute")
            if done.code != "ok":
                row.anomalies.append(
                    {"anomaly": "new_token_not_executed", "tool": tool, "code": done.code}
                )
        row.settle_seconds = max(row.settle_seconds or 0.0, time.monotonic() - ended)


# -- e. creates held upstream past the stale period ------------------------------------------


def delayed_creates(sc: Scenarios, row: Row) -> None:
    """Every request of the account held upstream for the stale period and 3 s more while the
    fault lasts (the sandbox's latency switch: the create is stored only then, long after the
    gateway gave up at its 5 s timeout and its lookups timed out too); assistants keep asking.
    The campaign's reconciliation judges the outcome: one order per intent, every order
    reported, no operation failed whose order landed. Settled when every intent has its order."""
    from harness.chaos import MAIN

    held_ms = (sc.campaign.cfg.stale_seconds + 3) * 1000
    intents = [sc.intent("delayed") for _ in range(2)]
    tokens = [sc.prepared(intent) for intent in intents]
    sc.cluster.set_faults(MAIN, latency_ms=held_ms)
    started = time.monotonic()
    threads = [
        threading.Thread(target=sc.pursue, args=(intent, token))
        for intent, token in zip(intents, tokens, strict=True)
    ]
    for thread in threads:
        thread.start()
    time.sleep(sc.seconds)
    sc.cluster.set_faults(MAIN)
    ended = time.monotonic()
    for thread in threads:
        thread.join()
    sc.window(row, started, ended)
    numbers = [
        number
        for (number,) in sc.cluster.sql(
            "select o.merchant_order_id from tools_operation o join tools_pendingconfirmation p "
            "on p.id = o.confirmation_id where p.arguments->>'description' = any(%s)",
            [intent.description for intent in intents],
        )
    ]
    sc.campaign.repeats_by_design.update(numbers)
    repeats = sc.cluster.sandbox_scalar(
        "select coalesce(sum(repeated_creates), 0) from invoicebox_sandboxmerchantorderid "
        "where merchant_order_id = any(%s)",
        numbers,
    )
    row.notes["creates_sent_again_after_the_stale_period"] = int(repeats)
    if any(outcome != ["ok"] for outcome in (intent.outcomes for intent in intents)):
        row.anomalies.append(
            {"anomaly": "delayed_create_unsettled", "outcomes": [i.outcomes for i in intents]}
        )
    row.settle_seconds = time.monotonic() - ended


def row_ids(data: dict[str, Any]) -> set[str]:
    """The ids of every row an answer lists."""
    return {
        str(next(r[key] for key in ROW_IDS if key in r))
        for rows in data.values()
        if isinstance(rows, list)
        for r in rows
        if isinstance(r, dict) and has_row_id(r)
    }


def has_row_id(row: dict[str, Any]) -> bool:
    return any(key in row for key in ROW_IDS)


def inflated(calm: dict[str, Any], answer: Answer) -> list[dict[str, Any]]:
    """What an answer under a list fault says beyond the same read in calm: a figure that
    differs, a row repeated, more rows. A refusal (or any other code) inflates nothing."""
    if answer.code != "ok":
        return []
    problems = []
    for name in FIGURES:
        if name in calm and answer.data.get(name) != calm[name]:
            problems.append({"field": name, "calm": calm[name], "answered": answer.data.get(name)})
    for name, rows in answer.data.items():
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            continue
        ids = [str(next(r[key] for key in ROW_IDS if key in r)) for r in rows if has_row_id(r)]
        if len(set(ids)) < len(ids):
            problems.append({"field": name, "repeated_rows": len(ids) - len(set(ids))})
        if len(rows) > len(calm.get(name) or []):
            problems.append(
                {"field": name, "calm_rows": len(calm.get(name) or []), "rows": len(rows)}
            )
    return problems


ONE_ROOM = {
    "sku": "ROOM-STD",
    "name": "Бронирование номера",
    "measure": "шт",
    "quantity": 1,
    "amount": "12200",
    "total_amount": "12200",
    "total_vat_amount": "2200",
    "vat_code": "RUS_VAT22",
    "type": "service",
}


def _line(roubles: int, vat: int, vat_code: str) -> dict[str, Any]:
    return {
        "sku": "ROOM-STD",
        "name": "Бронирование номера",
        "measure": "шт",
        "measureCode": "796",
        "quantity": 1,
        "amount": roubles,
        "amountWoVat": roubles - vat,
        "totalAmount": roubles,
        "totalVatAmount": vat,
        "vatCode": vat_code,
        "type": "service",
        "paymentType": "full_prepayment",
    }


def refund_body(order_id: str, n: int) -> dict[str, Any]:
    """A refund of one room (122 ₽), made in the merchant's account (not through the gateway)."""
    return {
        "parentId": order_id,
        "merchantOrderId": f"refund-by-hand-{order_id[:8]}-{n}",
        "description": "возврат",
        "amount": 122,
        "vatAmount": 22,
        "basketItems": [_line(122, 22, "RUS_VAT22")],
    }


def new_amount(roubles: int) -> dict[str, Any]:
    """The merchant edits the order in their account: one line, a new amount."""
    return {"amount": roubles, "vatAmount": 0, "basketItems": [_line(roubles, 0, "VATNONE")]}
