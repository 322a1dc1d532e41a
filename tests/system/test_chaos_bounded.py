"""The chaos campaign, bounded for `make test` (marked `system`, like the other suites that
drive servers, not `chaos`): one seed, 24 s of chaos, three of issue 27's faults (the
database's connections cut again and again, a create stored then answered 503, Redis down)
with gateway b's clock 90 s ahead, then the full reconciliation. `make chaos` runs the longer
campaigns (tests/system/test_chaos.py); benchmarks/README.md has every fault over
several seeds."""

from __future__ import annotations

import pytest

from tests.system.campaign import reconciled_campaign

pytestmark = [pytest.mark.postgres, pytest.mark.system]

FAULTS = ("db_cut", "503stored", "redis_down")


def test_a_bounded_campaign_of_three_faults_reconciles_without_an_anomaly(tmp_path):
    summary = reconciled_campaign(
        tmp_path,
        "cb",
        seed=27,
        duration=24,
        assistants=3,
        kills=0,
        faults=FAULTS,
        settle=60,
        skew=90,
    )

    # The chaos really ran: faults met, orders issued and every create POST seen on the wire.
    assert len({p["kind"] for p in summary["fault_phases"]}) >= 2, summary["fault_phases"]
    assert summary["reconciliation"]["upstream_orders"] >= 2
    assert summary["create_posts"] >= summary["reconciliation"]["upstream_orders"]
