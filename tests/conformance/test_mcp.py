"""mcp-http and mcp-stdio: the official MCP client SDK against the gateway the kit serves (HTTP)
or spawns (stdio), on the same prepared database."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import Kit, steps


@pytest.mark.parametrize("target", ["mcp-http", "mcp-stdio"])
def test_mcp_cycle_passes(kit: Kit, target: str):
    done, report = kit.run(target, "--contour", "kit")

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    verdicts = steps(report)
    assert verdicts["create_order executes once"] == "pass"
    assert verdicts["cancel_order"] == "pass"
    assert "fail" not in verdicts.values()
    assert report["platform"]["transport"] == target.removeprefix("mcp-")
    if target == "mcp-http":  # an outside client, when npx is there (CI has it)
        assert verdicts["inspector tools/list"] in {"pass", "skipped"}


def test_mcp_on_a_read_only_contour_reads_and_skips_the_write(kit: Kit):
    done, report = kit.run("mcp-stdio", "--contour", "reader")

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert steps(report)["find_orders"] == "pass"
    assert steps(report)["create_order"] == "skipped"
