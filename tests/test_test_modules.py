"""Each core module has its test module (issue 38 item 8): tests/<package path>/test_<module>.py.

The pipeline's modules, the journal's events and the clock must have one (the sweep aside, whose
tests are named by what it resolves). In the other packages
of the core (tools/contours, keys, people, background; audit; invoicebox) a module without one
is listed below with where it is tested instead, so a new module without tests fails here, and
so does a listed one that got its own (take it off the list)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUST = ["tools/pipeline/*.py", "tools/events.py", "tools/clock.py"]
CORE = [
    "tools/contours/*.py",
    "tools/keys/*.py",
    "tools/people/*.py",
    "tools/people/factors/*.py",
    "tools/background/*.py",
    "audit/*.py",
    "invoicebox/*.py",
]
# Tested elsewhere, by theme or through another module; or nothing of its own to test.
ELSEWHERE = {
    # the beat's sweep: tests/tools/test_unknown_outcomes.py, test_shipment_recovery.py
    "tools/pipeline/sweep.py",
    "tools/contours/api_tokens.py",  # tests/tools/admin/test_contour_tokens_admin.py
    "tools/contours/sites.py",  # tests/tools/contours/test_services.py, test_api_prefix.py
    "tools/people/admin_site.py",  # tests/tools/admin/
    "tools/people/axes_app.py",  # an AppConfig
    "tools/people/factors/admin.py",  # tests/tools/people/factors/test_second_factor_recovery.py
    "tools/people/factors/middleware.py",  # the step-up pages: people/factors/test_stepup.py
    "tools/people/factors/passkeys.py",  # tests/browser/test_passkeys_browser.py
    "tools/people/factors/views.py",  # tests/tools/people/factors/test_devices.py
    "tools/people/login_guard.py",  # tests/tools/people/test_logins.py
    "tools/people/urls.py",  # routes
    "audit/actors.py",  # tests/tools/test_actor_required.py, test_journal_writers.py
    "audit/admin.py",  # tests/audit/test_admin_lists.py, test_access.py
    "audit/apps.py",  # an AppConfig
    "audit/checkpoints.py",  # tests/audit/test_walk.py, test_chain_keys.py
    "audit/seals.py",  # tests/audit/test_signed_export.py, test_archive.py
    "audit/tasks.py",  # tests/audit/test_chain_keys.py, test_signed_export.py
    "audit/urls.py",  # routes
    "audit/views.py",  # tests/audit/test_journal_api.py
    "invoicebox/apps.py",  # an AppConfig
    "invoicebox/counterparties.py",  # tests/invoicebox/test_client_shipments_refunds.py
    "invoicebox/fiscal.py",  # tests/tools/test_item_marks.py
    "invoicebox/errors.py",  # tests/invoicebox/test_client.py
    "invoicebox/limits.py",  # tests/tools/test_upstream_protection.py (through the gateway)
    "invoicebox/models.py",  # tables of limits.py
    "invoicebox/money.py",  # tests/invoicebox/test_client.py
    "invoicebox/okei.py",  # tests/tools/test_units.py (through the gateway)
    "invoicebox/orders.py",  # tests/invoicebox/test_client.py, test_client_update.py
    "invoicebox/refunds.py",  # tests/invoicebox/test_client_shipments_refunds.py
    "invoicebox/shapes.py",  # tests/invoicebox/test_contract_fixtures.py
    "invoicebox/signals.py",  # the sandbox's hook
    "invoicebox/statuses.py",  # tests/invoicebox/test_client.py
    "invoicebox/transport.py",  # tests/tools/test_repeated_rows.py, test_transport_tcp.py
}


def modules(patterns: list[str]) -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for pattern in patterns
        for path in ROOT.glob(pattern)
        if path.name != "__init__.py"
    )


def module_tests(module: str) -> Path:
    folder, name = module.rsplit("/", 1)
    return ROOT / "tests" / folder / f"test_{name}"


def test_every_module_of_the_pipeline_the_events_and_the_clock_has_its_test_module():
    assert [m for m in modules(MUST) if not module_tests(m).exists() and m not in ELSEWHERE] == []


def test_the_rest_of_the_core_has_its_test_modules_but_the_listed():
    without = {m for m in modules(MUST + CORE) if not module_tests(m).exists()}

    assert sorted(without - ELSEWHERE) == [], "a module without its test module"
    assert sorted(ELSEWHERE - without) == [], "has its own test module now: take it off"
