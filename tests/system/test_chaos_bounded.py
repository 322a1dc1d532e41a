"""The chaos campaign, bounded for `make test` (marked `system`, like the other suites that
drive servers, not `chaos`): one seed, 24 s of chaos, three of issue 27's faults (the
database's connections cut again and again, a create stored then answered 503, Redis down)
with gateway b's clock 90 s ahead, then the full reconciliation. `make chaos` runs the longer
campaigns (tests/system/test_chaos.py); benchmarks/README.md has every fault over
several seeds."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from benchmarks.chaos import Config, run
from tests.system.cluster import database_url, postgres_params

pytestmark = [pytest.mark.postgres, pytest.mark.system]

FAULTS = ("db_cut", "503stored", "redis_down")


def test_a_bounded_campaign_of_three_faults_reconciles_without_an_anomaly(tmp_path):
    params = postgres_params()
    cfg = Config(seed=27, duration=24, assistants=3, kills=0, faults=FAULTS, settle=60,
                 skew=90, db_prefix=f"{settings.DATABASES['default']['NAME']}_cb"[:40],
                 database_url=database_url(params, "postgres"), keep_dir=str(tmp_path))

    summary = run(cfg)

    brief = {k: summary[k] for k in ("anomalies", "answers_by_code", "per_fault",
                                     "left_after_settling", "reconciliation")}
    assert summary["anomalies"] == [], json.dumps(brief, ensure_ascii=False, indent=1,
                                                  default=str)
    # The chaos really ran: faults met, orders issued and every create POST seen on the wire.
    assert len({p["kind"] for p in summary["fault_phases"]}) >= 2, summary["fault_phases"]
    assert summary["reconciliation"]["upstream_orders"] >= 2
    assert summary["create_posts"] >= summary["reconciliation"]["upstream_orders"]
