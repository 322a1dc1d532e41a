"""The README's live-run table says exactly what docs/conformance/ holds, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.management.commands.conformance import TARGETS
from conformance.report import REPORTS_DIR, Report, load_reports
from conformance.table import README, TableError, current_block, render, rewrite


def test_readme_table_matches_the_reports():
    readme = README.read_text(encoding="utf-8")

    assert current_block(readme) == render(TARGETS, load_reports(REPORTS_DIR))


def test_no_committed_invoicebox_report_comes_from_the_sandbox():
    for report in load_reports(REPORTS_DIR):
        assert report["target"] in TARGETS
        assert report["contour_mode"] != "sandbox" or report["target"] not in (
            "invoicebox-demo",
            "invoicebox-production",
        ), f"{report['_file']}: a sandbox run"


def passing_report(target: str, tmp: Path, date: str, contour_mode: str = "demo") -> Path:
    report = Report(
        target=target,
        gateway_version="9.9.9",
        catalog_fingerprint="abc",
        contour_mode=contour_mode,
        date=date,
    )
    report.add("auth", True, "ok")
    path = tmp / f"{target}-{date[:10]}.json"
    report.write(path)
    return path


def test_a_report_fills_its_row_and_the_others_stay_not_run(tmp_path: Path):
    passing_report("openai", tmp_path, "2026-12-01T10:00:00+00:00")
    newer = passing_report("openai", tmp_path, "2026-12-02T10:00:00+00:00")
    fingerprint = json.loads(newer.read_text())["fingerprint"]

    table = render(TARGETS, load_reports(tmp_path))

    assert f"| `openai` | 2026-12-02, gateway 9.9.9, report `{fingerprint}`" in table
    assert "| `gigachat` | not run |" in table


def test_a_failed_run_does_not_count(tmp_path: Path):
    report = Report(target="openai", contour_mode="sandbox")
    report.add("auth", False, "401")
    report.write(tmp_path / "openai.json")

    assert "| `openai` | not run |" in render(TARGETS, load_reports(tmp_path))


def test_an_edited_report_is_refused(tmp_path: Path):
    path = passing_report("gigachat", tmp_path, "2026-12-02T10:00:00+00:00")
    document = json.loads(path.read_text())
    document["steps"][0]["verdict"] = "pass"
    document["gateway_version"] = "1.0.0"  # edited after the run
    path.write_text(json.dumps(document))

    with pytest.raises(TableError, match="отпечаток"):
        render(TARGETS, load_reports(tmp_path))


def test_rewrite_updates_a_stale_table(tmp_path: Path):
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- conformance:start -->\n| stale |\n<!-- conformance:end -->\ny\n")
    passing_report("mcp-http", tmp_path, "2026-12-02T10:00:00+00:00")

    assert rewrite(TARGETS, readme, tmp_path) is True
    assert "| `mcp-http` | 2026-12-02" in readme.read_text()
    assert rewrite(TARGETS, readme, tmp_path) is False


def test_an_invoicebox_run_on_the_bundled_sandbox_fills_no_row(tmp_path: Path):
    """The committed-reports check above loops over what docs/conformance/ holds (nothing yet);
    this is the same rule on a report that breaks it."""
    passing_report("invoicebox-demo", tmp_path, "2026-12-02T10:00:00+00:00", "sandbox")
    passing_report("openai", tmp_path, "2026-12-02T10:00:00+00:00", "sandbox")

    table = render(TARGETS, load_reports(tmp_path))

    assert "| `invoicebox-demo` | not run |" in table
    assert "| `openai` | 2026-12-02" in table  # an assistant's run needs no live Invoicebox
