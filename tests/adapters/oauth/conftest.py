"""The OAuth endpoints as served: config.asgi's application in-process (Starlette's
TestClient), its sync work on its own threads, so the database is committed (transaction=True)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient


@pytest.fixture
def served(transactional_db: None) -> Iterator[TestClient]:
    from config.asgi import application

    # No lifespan: the OAuth routes need neither the MCP session manager nor the pool.
    yield TestClient(application, base_url="http://127.0.0.1:8000")
