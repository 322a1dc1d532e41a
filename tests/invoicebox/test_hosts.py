"""One loopback rule: the contour URL policy, OAuth's redirect URIs and the tools' return URLs
answer alike for every host, because they all ask invoicebox.hosts."""

from __future__ import annotations

import pytest

from adapters.oauth.provider import redirect_uri_problem
from invoicebox.hosts import is_loopback
from tools.contours.endpoints import base_url_problem
from tools.order_rules import check_url

HOSTS = [
    ("127.0.0.1", True),
    ("127.0.0.2", True),
    ("localhost", True),
    ("LOCALHOST", True),
    ("[::1]", True),
    ("10.0.0.1", False),
    ("localhost.evil.example", False),
    ("example.com", False),
    ("0.0.0.0", False),  # noqa: S104 (a host under test, not a bind)
]


@pytest.mark.parametrize(("host", "loopback"), HOSTS)
def test_every_plain_http_rule_follows_the_one_loopback_rule(host: str, loopback: bool) -> None:
    url = f"http://{host}:8080/back"

    assert is_loopback(host.strip("[]")) is loopback
    assert (redirect_uri_problem(url) is None) is loopback
    assert (check_url(url, "return_url", allow_loopback_http=True) == []) is loopback
    assert (base_url_problem("custom", url) == "") is loopback


def test_plain_http_to_loopback_is_still_refused_where_the_caller_allows_none() -> None:
    assert check_url("http://127.0.0.1/back", "return_url", allow_loopback_http=False) != []
