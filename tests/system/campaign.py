"""One chaos campaign as the system tests run it: benchmarks/chaos.py's `run` on the test
database's server, under a database prefix of the test's own, refused with a brief of the run
whenever the reconciliation found an anomaly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from harness.chaos import Config, run
from harness.cluster import database_url, postgres_params

BRIEF = (
    "anomalies",
    "answers_by_code",
    "per_fault",
    "kills",
    "left_after_settling",
    "reconciliation",
)


def reconciled_campaign(keep_dir: Path, prefix: str, **config: Any) -> dict[str, Any]:
    """Run a campaign (`config` as harness.chaos.Config takes it) and return its summary,
    after checking that the reconciliation against the sandbox's truth found nothing."""
    cfg = Config(
        db_prefix=f"{settings.DATABASES['default']['NAME']}_{prefix}"[:40],
        database_url=database_url(postgres_params(), "postgres"),
        keep_dir=str(keep_dir),
        **config,
    )
    summary = run(cfg)
    brief = {key: summary[key] for key in BRIEF if key in summary}
    assert summary["anomalies"] == [], json.dumps(brief, ensure_ascii=False, indent=1, default=str)
    return summary
