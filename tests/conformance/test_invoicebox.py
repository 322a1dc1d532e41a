"""invoicebox-demo / invoicebox-production against the bundled sandbox (no network here): the
same steps a live run makes against api.invoicebox.ru."""

from __future__ import annotations

import json

from tests.conformance.conftest import Kit, steps

CYCLE = [
    "auth",
    "lookup_company_by_inn",
    "find_orders",
    "create_order",
    "get_order by order_id",
    "get_order by merchant_order_id",
    "cancel_order",
    "find_orders after cancel",
]


def test_demo_target_runs_the_whole_cycle_and_reports_it(kit: Kit):
    done, report = kit.run("invoicebox-demo", "--contour", "kit")

    assert done.returncode == 0, done.stderr[-2000:]
    assert report is not None and report["passed"] is True
    assert [s["name"] for s in report["steps"]] == CYCLE
    assert set(steps(report).values()) == {"pass"}
    assert report["catalog_fingerprint"] and report["gateway_version"]
    # every upstream call of the write cycle is traceable by its request id
    create = next(s for s in report["steps"] if s["name"] == "create_order")
    assert create["upstream_request_ids"]


def test_report_holds_no_secret(kit: Kit):
    done, report = kit.run("invoicebox-demo", "--contour", "kit")
    text = json.dumps(report, ensure_ascii=False)

    assert done.returncode == 0
    assert "ibg_" not in text and "ibc_" not in text
    assert "b37c4c689295904ed21eee5d9a48d42e" not in text  # the contour's Invoicebox token


def test_production_target_refuses_a_non_production_contour(kit: Kit):
    done, report = kit.run("invoicebox-production", "--contour", "kit")

    assert done.returncode != 0
    assert report is None
    assert "production" in done.stderr


def test_production_target_needs_a_contour(kit: Kit):
    done, _ = kit.run("invoicebox-production")

    assert done.returncode != 0
    assert "--contour" in done.stderr


def test_a_read_only_contour_fails_the_write_step(kit: Kit):
    done, report = kit.run("invoicebox-demo", "--contour", "reader")

    assert done.returncode != 0
    assert report is not None and report["passed"] is False
    assert steps(report)["create_order"] == "fail"
    assert steps(report)["find_orders"] == "pass"
