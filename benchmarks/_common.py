"""Shared harness: a dedicated benchmark database, Django setup, stats, CPU load, results."""

from __future__ import annotations

import json
import math
import os
import platform
import re
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from audit.actors import SCAFFOLDING

ROOT = Path(__file__).resolve().parents[1]
# A quick check run (run_all --quick) writes elsewhere, so it never replaces real figures.
RESULTS = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "benchmarks" / "results"))
PG_ADMIN = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "dbname": "postgres"}
PG_NAME_RE = re.compile(r"^gw_bench_[a-z0-9_]{1,40}$")
DATABASES = ("sqlite", "postgres")

# The shared upstream budget (100 requests / 30 s per account) would turn every benchmark into
# a rate-limit test; the limiter itself still runs on every upstream request.
BENCH_ENV = {
    "INVOICEBOX_RATE_LIMIT": "1000000000/30",
    "INVOICEBOX_BACKOFF_SECONDS": "0",
    "LOG_LEVEL": "WARNING",
    "DJANGO_DEBUG": "false",
}


# -- databases -------------------------------------------------------------------------------


def _pg_admin(statement: Any) -> None:
    import psycopg

    with psycopg.connect(**PG_ADMIN, autocommit=True, connect_timeout=5) as conn:
        conn.execute(statement)


@contextmanager
def bench_database(kind: str, tag: str) -> Iterator[str]:
    """A DATABASE_URL of a database made for this run only, dropped afterwards.

    PostgreSQL: a database named gw_bench_<BENCH_DB_PREFIX><tag>_<pid>; only that name is ever created or
    dropped, other databases are never touched. SQLite: a file in a temporary directory.
    """
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix=f"gw-bench-{tag}-") as tmp:
            yield f"sqlite:///{tmp}/db.sqlite3"
        return
    if kind != "postgres":
        raise ValueError(f"--db must be one of {', '.join(DATABASES)}")
    from psycopg import sql

    # BENCH_DB_PREFIX (e.g. "h44cost_") sets apart the databases of sessions sharing a server.
    name = f"gw_bench_{os.environ.get('BENCH_DB_PREFIX', '')}{tag}_{os.getpid()}"
    if not PG_NAME_RE.match(name):
        raise ValueError(f"bad benchmark database name {name!r}")
    _pg_admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"postgres://{PG_ADMIN['user']}@{PG_ADMIN['host']}:{PG_ADMIN['port']}/{name}"
    finally:
        try:
            _close_django_connections()
        finally:
            # FORCE ends any session still on this database (a server that did not stop).
            _pg_admin(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _close_django_connections() -> None:
    if "django.db" in sys.modules:
        from django.apps import apps
        from django.db import connections

        if not apps.ready:
            return

        connections.close_all()


def setup_django(database_url: str, *, migrate: bool = True, **extra_env: str) -> None:
    """Point this process at the benchmark database (before Django loads) and migrate it."""
    os.environ.update({**BENCH_ENV, **extra_env, "DATABASE_URL": database_url})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import warnings

    import django

    # whitenoise looks for collected static files, which no benchmark serves.
    warnings.filterwarnings("ignore", "No directory at", UserWarning)
    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def server_env(database_url: str, port: int, **extra: str) -> dict[str, str]:
    return {**os.environ, **BENCH_ENV, **extra, "DATABASE_URL": database_url, "PORT": str(port)}


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> str:
    done = subprocess.run(  # noqa: S603 - our own manage.py with our own arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """uvicorn serving config.asgi:application on loopback, as `make demo` does (or granian)."""

    env: dict[str, str]
    port: int
    workers: int = 1
    app: str = "config.asgi:application"
    access_log: bool = False  # uvicorn's own line per request (the journal has every call)
    cwd: Path = ROOT  # another source tree (an earlier version) to serve instead
    granian: bool = False  # granian's ASGI interface (with lifespan) instead of uvicorn
    process: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=lambda: Path(tempfile.mkstemp(suffix=".log")[1]))

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        common = [
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--access-log" if self.access_log else "--no-access-log",
            "--log-level",
            "info" if self.access_log else "warning",
        ]
        if self.granian:
            return [sys.executable, "-m", "granian", "--interface", "asgi", *common, self.app]
        return [sys.executable, "-m", "uvicorn", self.app, *common]

    def start(self) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(  # noqa: S603
                self.command(),
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.command()[2]} exited:\n{self.log.read_text()[-3000:]}")
            try:
                httpx.get(f"{self.base}/api/schema/", timeout=2)
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            # With several workers the first answer comes from one of them; give the others
            # the time to import too, so no cell measures a worker still starting.
            time.sleep(1.5 * (self.workers - 1))
            return
        raise RuntimeError(f"{self.command()[2]} did not answer within 60 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.log.unlink(missing_ok=True)

    def pids(self) -> list[int]:
        return process_tree(self.process.pid) if self.process is not None else []

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def seed_key(
    database_url: str, *, upstream: str | None = None, merchant_id: str = "", token: str = ""
) -> str:
    """Migrate the benchmark database, make one contour with read and write, return its key.

    With `upstream` the contour calls that URL (a fake upstream process) with `token`;
    without it, the bundled sandbox in process."""
    setup_django(database_url)
    from tools.contours.services import create_contour
    from tools.keys.services import issue_key

    if upstream is None:
        return issue_key(
            create_contour("bench", mode="sandbox", toolsets=["read", "write"], actor=SCAFFOLDING),
            actor=SCAFFOLDING,
        )
    return issue_key(
        create_contour(
            "bench",
            mode="custom",
            toolsets=["read", "write"],
            token=token,
            base_url=upstream,
            merchant_id=merchant_id,
            actor=SCAFFOLDING,
        ),
        actor=SCAFFOLDING,
    )


@contextmanager
def process(
    args: list[str], port: int, what: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> Iterator[subprocess.Popen[bytes]]:
    """A helper process (fake upstream, reference server, floor) listening on `port`."""
    proc = subprocess.Popen(  # noqa: S603
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not listen on {port} within 60 s") from None
                time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- statistics ------------------------------------------------------------------------------


@contextmanager
def key_on_fake_upstream(tag: str, port: int, env: dict[str, str], token: str) -> Iterator[str]:
    """An in-process gateway's key on a PostgreSQL database made for the run, its contour
    calling harness/fake_upstream.py in a process of its own on `port` (real TCP); `env` is
    put in this process's environment before Django is set up."""
    from harness.fake_upstream import MERCHANT_ID

    fake = [sys.executable, "-m", "harness.fake_upstream", "--port", str(port)]
    with bench_database("postgres", tag) as url, process(fake, port, "fake upstream"):
        os.environ.update(env)
        yield seed_key(
            url, upstream=f"http://127.0.0.1:{port}", merchant_id=MERCHANT_ID, token=token
        )


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest sample with at least q% of samples at or below."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary_ms(samples: Sequence[float]) -> dict[str, float]:
    """Median, p99 and mean of samples given in seconds, in milliseconds."""
    if not samples:
        return {"n": 0, "median_ms": math.nan, "p99_ms": math.nan, "mean_ms": math.nan}
    return {
        "n": len(samples),
        "median_ms": round(statistics.median(samples) * 1000, 3),
        "p99_ms": round(percentile(samples, 99) * 1000, 3),
        "mean_ms": round(statistics.fmean(samples) * 1000, 3),
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


# -- machine and load ------------------------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def process_tree(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _proc_stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def _cpu_ticks(pids: Sequence[int]) -> int:
    total = 0
    for pid in pids:
        fields = _proc_stat(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def _machine_ticks() -> tuple[int, int]:
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values[:8]) - idle, sum(values[:8])


class CpuMeter:
    """CPU use over a window: the whole machine, and the processes named by `pids()`.

    Percent of one core (the machine has os.cpu_count() of them, so 200 % is all of two).
    What is busy but not ours is the other load on the shared machine (PostgreSQL's work for
    our queries counts there too).
    """

    def __init__(self, pids: Callable[[], Sequence[int]] = lambda: [os.getpid()]) -> None:
        self.pids = pids

    def __enter__(self) -> CpuMeter:
        self._pids = list(self.pids())
        self._own = _cpu_ticks(self._pids)
        self._busy, self._total = _machine_ticks()
        self._start = time.monotonic()
        self.result: dict[str, float] = {}
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.monotonic() - self._start
        busy, total = _machine_ticks()
        own = _cpu_ticks(self._pids)
        cores = os.cpu_count() or 1
        machine = (busy - self._busy) / max(1, total - self._total) * 100 * cores
        ours = (own - self._own) / CLOCK_TICKS / max(elapsed, 1e-9) * 100
        self.result = {
            "machine_busy_pct": round(machine, 1),
            "ours_pct": round(ours, 1),
            "others_pct": round(max(0.0, machine - ours), 1),
        }


def machine() -> dict[str, Any]:
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "loadavg_at_start": [round(v, 2) for v in os.getloadavg()],
    }


# -- results ---------------------------------------------------------------------------------


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def command_line() -> str:
    module = sys.modules["__main__"].__spec__
    name = module.name if module is not None else Path(sys.argv[0]).stem
    return shlex.join([".venv/bin/python", "-m", name, *sys.argv[1:]])


def save(name: str, data: dict[str, Any], markdown: str, started: float) -> None:
    """Print the report and keep it, with the command, date and machine, in results/."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = machine()
    info["loadavg_at_end"] = [round(v, 2) for v in os.getloadavg()]
    record = {
        "name": name,
        "command": command_line(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 1),
        "machine": info,
        "data": data,
        "markdown": markdown,
    }
    (RESULTS / f"{name}.json").write_text(
        json.dumps(record, ensure_ascii=False, indent=1, default=str) + "\n"
    )
    print(
        f"\n## {name}\n`{record['command']}` — {record['date']}, {record['seconds']} s, "
        f"load average {info['loadavg_at_start']} -> {info['loadavg_at_end']}\n"
    )
    print(markdown)
