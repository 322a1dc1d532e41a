"""`make test` spreads the suite with pytest-xdist's loadgroup (see group_by_shared_servers in
tests/conftest.py). If the groups stop reaching the scheduler (as with pytest 9.2,
pytest-xdist#1386), a module's tests scatter over processes: each process starts that module's
servers again, and tests that build on one another's state fail. This runs a real xdist run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_test_file_runs_in_one_process_under_make_tests_scheduler():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            "tests/tools/test_phrases.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    ran = re.findall(r"\[(gw\d+)\] .*PASSED (\S+)", done.stdout)
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(ran) > 3
    assert {worker for worker, _ in ran} == {ran[0][0]}, ran
    assert all(test.endswith("@tests/tools/test_phrases.py") for _, test in ran), ran
