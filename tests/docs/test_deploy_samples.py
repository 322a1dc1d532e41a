"""The two deployment samples agree on the hosts /mcp accepts: the public name with and
without a port (a public URL with a port sends `Host: name:port`, refused 421 otherwise)."""

from __future__ import annotations

import re

from tests.docs.helpers import DOCS

DEPLOY = DOCS / "deploy"


def hosts(text: str) -> set[str]:
    match = re.search(r"^\s*MCP_ALLOWED_HOSTS[=:]\s*(\S+)", text, re.M)
    assert match, "no MCP_ALLOWED_HOSTS"
    return set(match.group(1).split(","))


def test_both_samples_accept_the_public_name_with_and_without_a_port():
    systemd = hosts((DEPLOY / "systemd" / "env.example").read_text(encoding="utf-8"))
    compose = hosts((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))

    assert {"gateway.example", "gateway.example:*"} <= systemd
    assert {"gateway.example", "gateway.example:*"} <= compose
    assert {h for h in compose if h.startswith("gateway.")} == systemd
