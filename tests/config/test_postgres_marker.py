"""The suite's own hooks (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import on_postgres


@pytest.mark.postgres
def test_a_test_marked_postgres_runs_only_on_postgresql():
    # On SQLite the marker's hook skips this; were the hook gone, it would run and fail here.
    assert on_postgres()
