"""A PostgreSQL cluster of the harness's own (issue 39.5): the gateways' database on a server
that a fault may restart or freeze without touching the machine's shared server, nor the
sandbox's database on it.

initdb refuses to run as root: as root the cluster is made and run as the `postgres` user
(runuser), in a directory that user owns; as anyone else, as that user. Trust authentication
on 127.0.0.1 only, on a port of the run's range (harness/cluster.py server_port).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster import server_port

BIN_DIRS = (
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/14/bin",
)


class Unavailable(RuntimeError):
    """No PostgreSQL binaries here, or no way to run them as a non-root user."""


def _bin_dir() -> Path:
    for candidate in BIN_DIRS:
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise Unavailable(f"no initdb in {', '.join(BIN_DIRS)}")


@dataclass
class PrivatePostgres:
    """One cluster: `start`, `restart` (pg_ctl -m fast), `freeze`/`thaw` (SIGSTOP/SIGCONT of
    the postmaster and every backend), `stop` (and its directory removed)."""

    data: Path
    port: int
    bin_dir: Path
    user: str | None  # run as this user (we are root), or as ourselves (None)

    @classmethod
    def create(cls) -> PrivatePostgres:
        bin_dir = _bin_dir()
        user = "postgres" if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="gw-private-pg-"))
        data = root / "data"
        if user is not None:
            shutil.chown(root, user=user)
        server = cls(data=data, port=server_port(), bin_dir=bin_dir, user=user)
        server._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        (data / "postgresql.auto.conf").write_text(
            f"listen_addresses = '127.0.0.1'\nport = {server.port}\n"
            f"unix_socket_directories = '{root}'\nfsync = off\nmax_connections = 200\n"
        )
        if user is not None:
            shutil.chown(data / "postgresql.auto.conf", user=user)
        return server

    @property
    def params(self) -> dict[str, Any]:
        return {"host": "127.0.0.1", "port": self.port, "user": "postgres", "password": ""}

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin_dir / program), *args]
        if self.user is not None:
            command = [
                shutil.which("runuser") or "/usr/sbin/runuser",
                "-u",
                self.user,
                "--",
                *command,
            ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {(done.stderr or done.stdout)[-2000:]}")

    def _ctl(self, action: str, *args: str) -> None:
        log = self.data.parent / "server.log"
        self._run("pg_ctl", action, "-D", str(self.data), "-l", str(log), "-w", "-t", "60", *args)

    def start(self) -> PrivatePostgres:
        self._ctl("start")
        return self

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def postmaster(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])

    def processes(self) -> list[int]:
        """The postmaster and its children (backends, checkpointer, walwriter...), by parent
        pid from /proc: this cluster's only, never the shared server's."""
        master = self.postmaster()
        children = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:
                children.append(int(entry.name))
        return [master, *children]

    def freeze(self) -> list[int]:
        """SIGSTOP the postmaster first (no new backend forks meanwhile), then its children."""
        frozen = []
        for pid in self.processes():
            try:
                os.kill(pid, signal.SIGSTOP)
                frozen.append(pid)
            except ProcessLookupError:
                pass
        return frozen

    def thaw(self, frozen: list[int]) -> None:
        for pid in [*frozen[1:], *frozen[:1]]:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        try:
            self.thaw(self.processes())  # a run cut short inside a freeze
            self._ctl("stop", "-m", "immediate")
        except (OSError, RuntimeError, ValueError):
            pass
        shutil.rmtree(self.data.parent, ignore_errors=True)
