"""A conformance report: the target, what ran, each step's verdict; nothing secret."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from audit.redaction import scrub

Verdict = Literal["pass", "fail", "skipped"]
REPORTS_DIR = Path(__file__).resolve().parent.parent / "docs" / "conformance"
# Environment variables whose values are credentials: masked wherever they would appear.
SECRET_ENV = (
    "GIGACHAT_CREDENTIALS",
    "GIGACHAT_ACCESS_TOKEN",
    "GIGACHAT_PASSWORD",
    "OPENAI_API_KEY",
    "YC_API_KEY",
    "YC_IAM_TOKEN",
    "HERMES_API_KEY",
    "INVOICEBOX_TOKEN",
)
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"']+")
DETAIL_LIMIT = 600


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """The contour's and the environment's secrets, our own key shapes and bearer values hidden."""
    known = [*secrets, *(os.environ.get(name, "") for name in SECRET_ENV)]
    cleaned = scrub(_BEARER.sub(r"\1***", text), [s for s in known if s])
    return cleaned if len(cleaned) <= DETAIL_LIMIT else cleaned[:DETAIL_LIMIT] + "…"


@dataclass
class Step:
    name: str
    verdict: Verdict
    detail: str = ""
    upstream_request_ids: list[str] = field(default_factory=list)


@dataclass
class Report:
    target: str
    gateway_version: str = ""
    catalog_fingerprint: str = ""
    platform: dict[str, str] = field(default_factory=dict)
    contour_mode: str = ""
    date: str = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0).isoformat())
    steps: list[Step] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            bool(self.steps)
            and all(s.verdict != "fail" for s in self.steps)
            and any(s.verdict == "pass" for s in self.steps)
        )

    def add(
        self,
        name: str,
        ok: bool,
        detail: str = "",
        request_ids: Iterable[str] = (),
        secrets: Iterable[str] = (),
    ) -> bool:
        self.steps.append(
            Step(
                name, "pass" if ok else "fail", mask(detail, secrets), [r for r in request_ids if r]
            )
        )
        return ok

    def skip(self, name: str, why: str) -> None:
        self.steps.append(Step(name, "skipped", why))

    def body(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        return data

    def fingerprint(self) -> str:
        """sha256 of the report's canonical JSON: the README's table cites it."""
        canonical = json.dumps(
            self.body(), ensure_ascii=False, sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {**self.body(), "fingerprint": self.fingerprint()}
        path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def default_path(target: str, date: str) -> Path:
    return REPORTS_DIR / f"{target}-{date[:10]}.json"


def load_reports(directory: Path = REPORTS_DIR) -> list[dict[str, Any]]:
    reports = []
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        document["_file"] = path.name
        reports.append(document)
    return reports


def recomputed_fingerprint(document: dict[str, Any]) -> str:
    body = {k: v for k, v in document.items() if k not in ("fingerprint", "_file")}
    canonical = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
