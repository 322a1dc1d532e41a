"""The kit as a user runs it: `manage.py conformance` in its own process, on a SQLite database
prepared by the project's commands, with each platform's official SDK pointed (through that
SDK's own environment variables) at a scripted stub on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from adapters.functions.formats import PLATFORMS

ROOT = Path(__file__).resolve().parents[2]
# Credentials a developer may have exported must not leak into a stub run.
# A platform declaring an openai SDK target names its variables' prefix.
PLATFORM_VARS = re.compile(
    "^({})".format(
        "|".join(
            [
                "GIGACHAT_",
                "OPENAI_",
                "YC_",
                "YANDEX",
                "HERMES_",
                "CONFORMANCE_",
                *(f"{p.openai_sdk.env}_" for p in PLATFORMS if p.openai_sdk is not None),
            ]
        )
    )
)


@dataclass
class Kit:
    env: dict[str, str]
    state: Path

    def manage(
        self, *args: str, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=300,
            check=check,
        )

    def run(
        self, target: str, *args: str, env: dict[str, str] | None = None
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
        path = self.state / f"{target}-{len(list(self.state.glob('*.json')))}.json"
        done = self.manage(
            "conformance", target, "--report", str(path), *args, env=env, check=False
        )
        report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        return done, report


@pytest.fixture(scope="session")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    state = tmp_path_factory.mktemp("conformance")
    env = {name: value for name, value in os.environ.items() if not PLATFORM_VARS.match(name)}
    env.update(DATABASE_URL=f"sqlite:///{state / 'db.sqlite3'}", LOG_LEVEL="WARNING")
    found = Kit(env=env, state=state)
    found.manage("migrate", "--noinput")
    found.manage("create_contour", "kit", "--mode", "sandbox", "--toolsets", "read,write")
    found.manage("create_contour", "reader", "--mode", "sandbox")
    return found


def steps(report: dict[str, Any]) -> dict[str, str]:
    return {step["name"]: step["verdict"] for step in report["steps"]}


def order_arguments() -> dict[str, Any]:
    expires = (timezone.now() + timedelta(days=2)).replace(microsecond=0).isoformat()
    return {
        "description": "Проверка совместимости",
        "currency_id": "RUB",
        "customer": {"type": "legal", "name": "ООО «Проверка»", "vat_number": "7710044140"},
        "basket_items": [
            {
                "sku": "KIT",
                "name": "Проверка совместимости",
                "type": "service",
                "measure_code": "796",
                "quantity": 1,
                "amount": "1000",
                "total_amount": "1000",
                "total_vat_amount": "0",
                "vat_code": "VATNONE",
            }
        ],
        "amount": "1000",
        "vat_amount": "0",
        "expiration_date": expires,
    }


def token_in(request: Any) -> str:
    """The confirmation token as our result message carried it back to the provider."""
    found = re.findall(r"ibc_[A-Za-z0-9_-]+", json.dumps(request, ensure_ascii=False))
    assert found, "no confirmation token reached the provider"
    return found[-1]
