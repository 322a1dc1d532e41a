"""`make demo` with WORKERS=2 on PostgreSQL: two worker processes serve one app and one database."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest

from harness.cluster import (
    ROOT,
    database_url,
    free_port,
    postgres_params,
    scratch_database,
)
from tests.conftest import VALID_ORDER

pytestmark = [pytest.mark.postgres]


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The ppid is the 2nd field after the parenthesised command name.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_make_demo_serves_from_two_processes_on_postgres(tmp_path: Path):
    params = postgres_params()
    port = free_port()
    name = f"gateway_demo_{os.getpid()}"
    log = tmp_path / "demo.log"
    with scratch_database(params, name) as dbname:
        # ensure_database would create it too; the scratch one is dropped afterwards.
        url = database_url(params, dbname)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DJANGO_", "CELERY_", "PROMETHEUS_"))
        }
        env.update({"GATEWAY_STATE_DIR": str(tmp_path / "state"), "LOG_LEVEL": "WARNING"})
        # -o: the virtualenv is the one running these tests; never reinstall from here.
        demo = subprocess.Popen(
            [
                shutil.which("make") or "make",
                "-o",
                ".venv/bin/.installed",
                "demo",
                f"PORT={port}",
                "WORKERS=2",
                f"DATABASE_URL={url}",
            ],
            cwd=ROOT,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                assert demo.poll() is None, log.read_text()[-3000:]
                try:
                    httpx.get(f"{base}/api/schema/", timeout=2)
                    break
                except httpx.TransportError:
                    time.sleep(0.3)
            key = re.search(r"API key:\s+(\S+)", log.read_text()).group(1)
            master = next(pid for pid in children(demo.pid) if "uvicorn" in command_line(pid))
            workers = wait_for_workers(master)
            headers = {"Authorization": f"Bearer {key}"}
            args = {
                **VALID_ORDER,
                "expiration_date": (datetime.now(UTC) + timedelta(days=2)).isoformat(),
            }
            first = httpx.post(
                f"{base}/api/v1/call",
                headers=headers,
                timeout=30,
                json={"name": "create_order", "arguments": args},
            ).json()
            confirmed = {**args, "confirmation_token": first["confirmation"]["token"]}
            answers = [
                httpx.post(
                    f"{base}/api/v1/call",
                    headers=headers,
                    timeout=30,
                    json={"name": "create_order", "arguments": confirmed},
                ).json()
                for _ in range(6)
            ]

            assert len(workers) == 2
            assert [a["replayed"] for a in answers] == [False] + [True] * 5
            with psycopg.connect(**params, dbname=dbname) as conn:
                operations = conn.execute("select state from tools_operation").fetchall()
                orders = conn.execute("select count(*) from invoicebox_sandboxorder").fetchone()
            assert operations == [("done",)]
            assert orders == (1,)
            # Every scrape, whichever worker answers, adds up both workers' counters.
            totals = {calls_total(httpx.get(f"{base}/metrics", timeout=10).text) for _ in range(8)}
            assert totals == {7.0}, totals
            assert "PROMETHEUS_MULTIPROC_DIR=" in log.read_text()
        finally:
            os.killpg(demo.pid, signal.SIGTERM)
            try:
                demo.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(demo.pid, signal.SIGKILL)


def calls_total(metrics: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("gateway_calls_total{")
    )


def wait_for_workers(master: int, count: int = 2, seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        # uvicorn's supervisor spawns its workers with multiprocessing (beside a resource
        # tracker, which serves nothing).
        workers = [pid for pid in children(master) if "multiprocessing.spawn" in command_line(pid)]
        if len(workers) >= count:
            return workers
        time.sleep(0.2)
    return workers
