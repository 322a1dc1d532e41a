"""The official MCP conformance suite against two workers behind the balancer (which adds the
conformance contour's key: the suite sends none). What does not apply to this server is listed
in conformance-baseline.yml; the suite fails on an unexpected failure and on a stale entry."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.system.conftest import NODE, NODE_DIR, Balanced

pytestmark = [pytest.mark.postgres, pytest.mark.system]

SUITE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = NODE_DIR.parent / "conformance-baseline.yml"
APPLICABLE = {
    "server-initialize": 1,
    "ping": 1,
    "tools-list": 1,
    "server-sse-multiple-streams": 2,
    "dns-rebinding-protection": 2,
}


def test_the_conformance_suite_passes_what_applies(balanced: Balanced, tmp_path):
    # when: every server scenario (the suite needs Node 22: the npm `node` package's)
    done = subprocess.run(
        [
            str(NODE),
            str(SUITE),
            "server",
            "--url",
            balanced.conformance_url,
            "--expected-failures",
            str(BASELINE),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    # then
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    passed = {
        name: int(count)
        for name, count in re.findall(r"✓ ([\w-]+): (\d+) passed, 0 failed", output)
    }
    assert passed == APPLICABLE, output[-3000:]
