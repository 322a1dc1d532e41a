"""A short chaos campaign: assistants, every upstream fault and a killed gateway
worker against the production-shaped cluster, then the full reconciliation (benchmarks/chaos.py
is the long version of the same code)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from benchmarks.chaos import FAULT_KINDS, Config, run
from tests.reliability.cluster import database_url, postgres_params

pytestmark = [pytest.mark.postgres]


def test_a_short_chaos_campaign_reconciles_without_an_anomaly(tmp_path):
    params = postgres_params()
    cfg = Config(seed=19, duration=45, assistants=6, kills=2, faults=FAULT_KINDS, settle=60,
                 db_prefix=f"{settings.DATABASES['default']['NAME']}_chaos"[:40],
                 database_url=database_url(params, "postgres"), keep_dir=str(tmp_path))

    summary = run(cfg)

    brief = {k: summary[k] for k in ("anomalies", "answers_by_code", "kills", "reconciliation")}
    assert summary["anomalies"] == [], json.dumps(brief, ensure_ascii=False, indent=1)
    # The campaign really ran its chaos: orders issued, faults met, a worker killed mid-call.
    assert summary["reconciliation"]["upstream_orders"] >= 5
    assert {p["kind"] for p in summary["fault_phases"]} == set(FAULT_KINDS)
    # Two kills are planned; a restart on a loaded machine can outlast the second's slot.
    assert 1 <= len(summary["kills"]) <= 2
    assert summary["answers_by_code"].get("outcome_unknown", 0) > 0
