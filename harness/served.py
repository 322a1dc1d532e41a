"""One gateway served by uvicorn over TCP for a test module: its management commands, a free
port, and the server started and stopped (what tests/adapters' served suites share)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port(first: int, last: int) -> int:
    for port in range(first, last + 1):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {first}-{last}")


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@contextmanager
def serving(env: dict[str, str], port: int, log_path: Path) -> Iterator[str]:
    """config.asgi:application on 127.0.0.1:port, one worker; yields its base URL once /health
    answers, and stops it after."""
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
                "--no-access-log",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(150):
                try:
                    httpx.get(f"{base}/health", timeout=1)
                    break
                except httpx.TransportError:
                    if server.poll() is not None:
                        raise RuntimeError(log_path.read_text()) from None
                    time.sleep(0.1)
            yield base
        finally:
            server.terminate()
            server.wait(timeout=10)
