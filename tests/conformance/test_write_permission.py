"""Targets that write need --allow-write on any contour not in mode sandbox, and say that the
kit confirms its own writes. A `custom` contour may be the real API behind a proxy; here it is
the bundled sandbox on a loopback address, so the run needs no network."""

from __future__ import annotations

import pytest

from tests.conformance.conftest import Kit, steps

CUSTOM_URL = "http://127.0.0.1/sandbox/invoicebox"


@pytest.fixture(scope="module")
def custom(kit: Kit) -> str:
    # The bundled sandbox answers in-process only at addresses named exactly (the own one, or
    # INVOICEBOX_SANDBOX_IN_PROCESS_URLS): this loopback URL is named, so no network is needed.
    kit.env["INVOICEBOX_SANDBOX_IN_PROCESS_URLS"] = CUSTOM_URL
    kit.manage(
        "create_contour",
        "kit-custom",
        "--mode",
        "custom",
        "--toolsets",
        "read,write",
        "--base-url",
        CUSTOM_URL,
    )
    return "kit-custom"


@pytest.mark.parametrize("target", ["invoicebox-demo", "mcp-stdio"])
def test_a_custom_contour_is_only_read_without_allow_write(kit: Kit, custom: str, target: str):
    done, report = kit.run(target, "--contour", custom)

    assert report is not None, done.stderr[-2000:]
    assert steps(report)["create_order"] == "skipped"
    assert "--allow-write" in next(
        s["detail"] for s in report["steps"] if s["name"] == "create_order"
    )
    assert "cancel_order" not in steps(report)
    assert "writes" not in report["platform"]


@pytest.mark.parametrize("target", ["invoicebox-demo", "mcp-stdio"])
def test_with_allow_write_it_writes_and_says_it_confirms_them_itself(
    kit: Kit, custom: str, target: str
):
    done, report = kit.run(target, "--contour", custom, "--allow-write")

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert steps(report)["cancel_order"] == "pass"
    assert "сам подтверждает свои записи" in report["platform"]["writes"]
    assert "сам подтверждает свои записи" in done.stdout


def test_on_the_sandbox_the_kit_writes_and_says_so(kit: Kit):
    done, report = kit.run("mcp-stdio", "--contour", "kit")

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert steps(report)["create_order executes once"] == "pass"
    assert "сам подтверждает свои записи" in done.stdout
