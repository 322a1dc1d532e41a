"""Shared fixtures: contours on the bundled sandbox, keys, and an assistant speaking REST."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from audit import lanes
from audit.actors import SCAFFOLDING
from harness.fake_upstream import FakeServer, serve
from harness.orders import VALID_ORDER as VALID_ORDER
from harness.orders import order_args as order_args
from invoicebox import connections
from tools.contours.services import DEMO_TOKEN, create_contour
from tools.keys.services import issue_key
from tools.models import Contour
from tools.pipeline import anonymous

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from time_machine import TimeMachineFixture

SANDBOX = "/sandbox/invoicebox/v3"


@dataclass
class Assistant:
    """An assistant holding one contour key and speaking the REST wire contract."""

    http: Client
    key: str
    contour: Contour

    @property
    def actor(self) -> str:
        """How the journal and the core name this assistant: its key's actor."""
        from tools.keys.scope import actor_of
        from tools.models import ApiKey

        key = ApiKey.authenticate(self.key)
        assert key is not None
        return actor_of(key)

    def call(self, name: str, arguments: Any) -> tuple[int, dict[str, Any]]:
        return self.post("/api/v1/call", {"name": name, "arguments": arguments})

    def post(self, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        response = self.http.post(
            path,
            data=json.dumps(body, ensure_ascii=False),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {self.key}",
        )
        return response.status_code, response.json()

    def get(self, path: str) -> tuple[int, Any]:
        response = self.http.get(path, HTTP_AUTHORIZATION=f"Bearer {self.key}")
        return response.status_code, response.json()


def on_postgres() -> bool:
    return "postgresql" in settings.DATABASES["default"]["ENGINE"]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_by_shared_servers(items)
    skip_postgres_tests_elsewhere(items)


def group_by_shared_servers(items: list[pytest.Item]) -> None:
    """`make test` spreads the suite over processes (pytest-xdist, --dist loadgroup). A test
    file stays in one process, so its module fixtures start once; and the tests that share a
    session fixture of ours (a cluster, a served gateway, the kit) stay with the conftest
    that defines it, so that fixture starts once too."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        definitions = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
        shared = sorted(
            {
                defs[-1].baseid
                for name, defs in definitions.items()
                if defs
                and defs[-1].scope == "session"
                and defs[-1].baseid
                and name != "anyio_backend"
            }
        )
        item.add_marker(
            pytest.mark.xdist_group(shared[0] if shared else item.nodeid.split("::", 1)[0])
        )


def skip_postgres_tests_elsewhere(items: list[pytest.Item]) -> None:
    """The `postgres` marker's one skip: row locks, concurrent writers and the multi-process
    suites prove nothing on SQLite, so without PostgreSQL they are skipped, never run."""
    if on_postgres():
        return
    skip = pytest.mark.skip(
        reason="needs PostgreSQL (marker `postgres`): set DATABASE_URL="
        "postgres://...; it points at " + settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    )
    for item in items:
        if item.get_closest_marker("postgres") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fast_retries(settings: Any) -> None:
    settings.INVOICEBOX_BACKOFF_SECONDS = 0


@pytest.fixture(autouse=True)
def _own_state_dir(
    settings: Any, tmp_path_factory: pytest.TempPathFactory, monkeypatch: Any
) -> None:
    """Each test its own state directory, for itself and the processes it starts: a server that
    another test left running writes its URL there (tools/contours/sites.py), and a command run
    here would otherwise take that server for the one `make demo` serves."""
    state = tmp_path_factory.mktemp("state")
    settings.GATEWAY_STATE_DIR = str(state)
    monkeypatch.setenv("GATEWAY_STATE_DIR", str(state))


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    # The counterparty cache outlives a test's database rollback; ids are reused after it.
    cache.clear()
    # So do the anonymous refusals' sampling windows (tools/pipeline/anonymous.py): each test's first
    # anonymous refusal of a kind is journaled, as a fresh process's is.
    anonymous.forget()
    # And where this process left the journal's lane heads (audit/lanes.py): a guess about a
    # flushed table costs a statement, which the tests that count statements would see.
    lanes.FREE_HEADS.forget()


@pytest.fixture
def fake_upstream() -> Iterator[FakeServer]:
    """harness/fake_upstream.py on a loopback port of its own (real TCP), and no pooled client
    of it left behind."""
    server = serve()
    yield server
    server.shutdown()
    server.server_close()
    connections.forget_all()


@pytest.fixture
def contour(db: None) -> Contour:
    return create_contour(
        "acme", mode="sandbox", name="Acme", toolsets=["read", "write"], actor=SCAFFOLDING
    )


@pytest.fixture
def read_only_contour(db: None) -> Contour:
    return create_contour("viewer", mode="sandbox", name="Viewer", actor=SCAFFOLDING)


@pytest.fixture
def assistant(contour: Contour) -> Assistant:
    return Assistant(http=Client(), key=issue_key(contour, actor=SCAFFOLDING), contour=contour)


@pytest.fixture
def reader(read_only_contour: Contour) -> Assistant:
    return Assistant(
        http=Client(),
        key=issue_key(read_only_contour, actor=SCAFFOLDING),
        contour=read_only_contour,
    )


def sandbox_orders(http: Client, **filters: str) -> list[dict[str, Any]]:
    """What the sandbox holds for the demo merchant, read over its own HTTP API."""
    response = http.get(
        f"{SANDBOX}/filter/api/order/order",
        data={"_pageSize": "100", **filters},
        HTTP_AUTHORIZATION=f"Bearer {DEMO_TOKEN}",
        HTTP_USER_AGENT="tests/1.0",
        CONTENT_TYPE="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()["data"]


# The former global groups, as the roles they became (tools/migrations/0007): a test that puts
# someone "in the operators group" gives them that role on every contour that exists now.
# Rows are written directly, like the users themselves: set-up is not a journaled grant.
GROUP_ROLES = {"owners": "owner", "operators": "operator", "auditors": "auditor"}


def grant_everywhere(user: Any, *groups: str) -> None:
    from tools.models import Contour, ContourRole

    for group in groups:
        for contour in Contour.objects.all():
            ContourRole.objects.get_or_create(
                user=user, contour=contour, role=GROUP_ROLES.get(group, group)
            )


# -- the clock ---------------------------------------------------------------------------------


class Clock:
    """The clocks the code reads, moved on without sleeping: the wall clock (datetime, time.time:
    time-machine, ticking on from where it is moved to), which tools.clock.now() follows on
    PostgreSQL too while this runs (clock.following_host(): the server's clock can't be moved;
    SQL's Now() still reads it), and the process's time.monotonic (the anonymous refusals'
    windows), which only ever moves forward here, as its contract says."""

    def __init__(self, machine: TimeMachineFixture, monkeypatch: pytest.MonkeyPatch) -> None:
        self._machine = machine
        self._ahead = 0.0
        machine.move_to(timezone.now(), tick=True)
        real_monotonic = time.monotonic
        monkeypatch.setattr(time, "monotonic", lambda: real_monotonic() + self._ahead)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._machine.shift(timedelta(seconds=seconds))
        self._ahead += seconds

    def move_to(self, moment: datetime) -> None:
        """Set the wall clock (aware) to `moment`, say a minute before a contour's midnight."""
        self._machine.move_to(moment, tick=True)


@pytest.fixture
def clock(time_machine: TimeMachineFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    from tools import clock as database_clock

    with database_clock.following_host():
        yield Clock(time_machine, monkeypatch)


# -- the cast: one set of people for every test ------------------------------------------------


def password_of(name: str) -> str:
    return f"pw-{name}-123"


OLGA_EMAIL = "olga@example.com"


def logged_in(user: Any, **client_options: Any) -> Client:
    http = Client(**client_options)
    http.force_login(user)
    return http


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    """A person (password: password_of(name)) with the roles of `groups` on every contour
    that exists when they are made."""
    from django.contrib.auth.models import User

    def _make(name: str, *groups: str, staff: bool = False, superuser: bool = False) -> User:
        user = User.objects.create_user(
            name, password=password_of(name), is_staff=staff, is_superuser=superuser
        )
        grant_everywhere(user, *groups)
        return user

    return _make


@pytest.fixture
def olga(make_user: Callable[..., User]) -> User:
    """Olga, an operator (she approves what assistants prepare) of every contour made before
    her, so name her after the contour fixtures; her alerts go to OLGA_EMAIL."""
    user = make_user("olga", "operators")
    user.email = OLGA_EMAIL
    user.save(update_fields=["email"])
    return user


@pytest.fixture
def operator(olga: User) -> Client:
    """Olga, logged in."""
    return logged_in(olga)
