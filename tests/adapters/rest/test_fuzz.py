"""Fuzzing: schemathesis against /api/schema/ (never a 500), hypothesis over tool arguments."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from audit.actors import SCAFFOLDING
from tests.conftest import VALID_ORDER, order_args
from tools import catalog
from tools.contours.services import create_contour
from tools.keys.services import issue_key
from tools.models import Contour
from tools.pipeline import gateway

ALLOWED_STATUSES = {"ok", "confirmation_required", "awaiting_approval", "rejected", "error"}
FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture
def fuzz_contour(db: None) -> Contour:
    return create_contour(
        "fuzz", mode="sandbox", toolsets=["read", "write", "refund"], actor=SCAFFOLDING
    )


def _assert_sane(contour: Contour, name: Any, arguments: Any) -> None:
    outcome = gateway.call(contour, name, arguments, channel="rest", actor="fuzz")
    assert outcome.code != "internal_error", (name, arguments, outcome.message)
    assert outcome.status in ALLOWED_STATUSES
    assert outcome.http_status < 500 or outcome.code in {
        "upstream_unavailable",
        "outcome_unknown",
    }, (name, arguments, outcome.code)
    assert outcome.journal_id is not None  # journaled, whatever came in


@FUZZ
@given(name=st.sampled_from(catalog.names()) | st.text(max_size=20), arguments=json_values)
def test_arbitrary_arguments_never_crash_the_gateway(
    fuzz_contour: Contour, name: Any, arguments: Any
):
    _assert_sane(fuzz_contour, name, arguments)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


ORDER_PATHS = [
    *_paths(VALID_ORDER),
    ("expiration_date",),
    ("confirmation_token",),
    ("allow_duplicate",),
    ("notification_url",),
]


@FUZZ
@given(path=st.sampled_from(ORDER_PATHS), value=json_values, drop=st.booleans())
def test_near_valid_orders_are_refused_or_accepted_never_crash(
    fuzz_contour: Contour, path: tuple[Any, ...], value: Any, drop: bool
):
    args = copy.deepcopy(order_args())
    target: Any = args
    for step in path[:-1]:
        target = target[step]
    if drop and isinstance(target, dict):
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    _assert_sane(fuzz_contour, "create_order", args)


@pytest.fixture
def fuzz_key(fuzz_contour: Contour) -> str:
    return issue_key(fuzz_contour, actor=SCAFFOLDING)


def test_no_request_to_the_documented_api_is_a_500(fuzz_key: str):
    """Every operation of /api/schema/, positive and negative cases, through the WSGI app."""
    from config.wsgi import application

    # As Django's test client does: the raw WSGI handler would close the test's connection
    # (and its transaction) at the start and end of every request.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        _fuzz_every_operation(application, fuzz_key)
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


def _fuzz_every_operation(application: Any, fuzz_key: str) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5  # tools, call, confirmations and the platform call endpoints
    headers = {"Authorization": f"Bearer {fuzz_key}"}
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(
                max_examples=25,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def run(case: Any) -> None:
                response = case.call(headers=headers)
                case.validate_response(response, checks=[not_a_server_error])

            run()
