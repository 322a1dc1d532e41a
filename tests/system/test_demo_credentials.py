"""`make demo`'s seed on two databases in turn: each keeps credentials that work for it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
from django.contrib.auth import authenticate
from tools.models import ApiKey
import sys
key, password = sys.argv[-2:]
found = ApiKey.authenticate(key)
user = authenticate(username="admin", password=password)
print("key-ok" if found is not None and found.contour.slug == "demo" else "key-bad")
print("admin-ok" if user is not None and user.is_superuser else "admin-bad")
"""


def manage(database: Path, state: Path, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "GATEWAY_STATE_DIR": str(state)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return done.stdout


def seed(database: Path, state: Path) -> tuple[str, str]:
    out = manage(database, state, "seed_demo")
    key = re.search(r"^API key:\s+(\S+)", out, re.M).group(1)
    password = re.search(r"login admin / password (\S+)", out).group(1)
    return key, password


def works(database: Path, state: Path, key: str, password: str) -> list[str]:
    out = manage(
        database, state, "shell", "-c", CHECK.replace("sys.argv[-2:]", f"[{key!r}, {password!r}]")
    )
    return [word for word in out.split() if word.startswith(("key-", "admin-"))]


def test_switching_databases_back_and_forth_keeps_each_ones_working_credentials(tmp_path: Path):
    # given: two databases sharing one var/ directory
    state = tmp_path / "var"
    first, second = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"
    for database in (first, second):
        manage(database, state, "migrate", "--noinput")

    # when: seeded on the first, then the second, then the first again
    a1 = seed(first, state)
    b1 = seed(second, state)
    a2 = seed(first, state)

    # then: the first database got its own credentials back, not new ones, and both work
    assert a2 == a1
    assert b1[0] != a1[0]
    assert works(first, state, *a2) == ["key-ok", "admin-ok"]
    assert works(second, state, *b1) == ["key-ok", "admin-ok"]
    # and a credential of one database is not what the other prints
    assert works(second, state, *a1) == ["key-bad", "admin-bad"]
