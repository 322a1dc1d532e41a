"""The README's "live run" table: generated from the reports in docs/conformance/, never typed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conformance.report import REPORTS_DIR, load_reports, recomputed_fingerprint

README = REPORTS_DIR.parent.parent / "README.md"
START, END = "<!-- conformance:start -->", "<!-- conformance:end -->"
BLOCK = re.compile(re.escape(START) + r"\n(.*?)" + re.escape(END), re.S)


class TableError(ValueError):
    """A report that can't back a row: tampered with, or not a passing run."""


def is_live(report: dict[str, Any]) -> bool:
    """A run against Invoicebox itself that went to the bundled sandbox proves nothing of it."""
    return not (
        report["target"].startswith("invoicebox-") and report.get("contour_mode") == "sandbox"
    )


def newest_passing(reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    newest: dict[str, dict[str, Any]] = {}
    for report in reports:
        if report.get("fingerprint") != recomputed_fingerprint(report):
            raise TableError(f"{report['_file']}: отпечаток не сходится с содержимым")
        if not report.get("passed") or not is_live(report):
            continue
        current = newest.get(report["target"])
        if current is None or report["date"] > current["date"]:
            newest[report["target"]] = report
    return newest


def render(targets: tuple[str, ...], reports: list[dict[str, Any]]) -> str:
    rows = ["| target | live run |", "|---|---|"]
    newest = newest_passing(reports)
    for target in targets:
        report = newest.get(target)
        cell = (
            "not run"
            if report is None
            else f"{report['date'][:10]}, gateway {report['gateway_version']}, "
            f"report `{report['fingerprint']}` ({report['_file']})"
        )
        rows.append(f"| `{target}` | {cell} |")
    return "\n".join(rows) + "\n"


def current_block(readme: str) -> str:
    match = BLOCK.search(readme)
    if match is None:
        raise TableError(f"README.md: нет блока {START} … {END}")
    return match.group(1)


def rewrite(
    targets: tuple[str, ...], readme_path: Path = README, directory: Path = REPORTS_DIR
) -> bool:
    text = readme_path.read_text(encoding="utf-8")
    table = render(targets, load_reports(directory))
    if current_block(text) == table:
        return False
    readme_path.write_text(BLOCK.sub(lambda _: f"{START}\n{table}{END}", text), encoding="utf-8")
    return True
