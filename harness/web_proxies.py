"""The proxy recipes as committed (docs/deploy/nginx.conf, docs/deploy/Caddyfile), run with
Debian's nginx and caddy in front of gateways for a test (issue 41). Only the listen address
and the upstream addresses of the samples are replaced (and Caddy's admin API moved off the
shared :2019); tests/system/test_proxies.py and the third-party client suite use them."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from harness.cluster import ROOT, free_port

DEPLOY = ROOT / "docs" / "deploy"
PROXIES = ("nginx", "caddy")


def unavailable(name: str) -> str | None:
    """Why this proxy cannot run here (the test is then skipped), or None."""
    if shutil.which(name) is None:
        return f"{name} is not installed (apt-get install {name}; .ci/run does)"
    if name == "nginx" and os.geteuid() != 0:
        return "nginx with Debian's compiled-in temp paths needs root here"
    return None


def render_nginx(tmp: Path, upstreams: list[str], port: int) -> list[str]:
    text = (DEPLOY / "nginx.conf").read_text()
    servers = "\n        ".join(f"server {upstream};" for upstream in upstreams)
    rendered = text.replace("server 127.0.0.1:8000;", servers)
    rendered = rendered.replace("listen 80;", f"listen 127.0.0.1:{port};")
    assert all(rendered.count(f"server {each};") == 1 for each in upstreams)
    assert f"listen 127.0.0.1:{port};" in rendered
    (tmp / "logs").mkdir(exist_ok=True)
    conf = tmp / "nginx.conf"
    conf.write_text(rendered)
    return [
        "nginx",
        "-c",
        str(conf),
        "-p",
        str(tmp),
        "-e",
        str(tmp / "logs" / "error.log"),
        "-g",
        f"daemon off; pid {tmp / 'nginx.pid'};",
    ]


def render_caddy(tmp: Path, upstreams: list[str], port: int) -> list[str]:
    text = (DEPLOY / "Caddyfile").read_text()
    rendered = text.replace("reverse_proxy web-a:8000 web-b:8000 {", "reverse_proxy UPSTREAMS {")
    rendered = rendered.replace("UPSTREAMS", " ".join(upstreams))
    rendered = rendered.replace("\n:80 {", f"\nhttp://127.0.0.1:{port} {{")
    # Test-only: the admin API on a free loopback port, not on the shared :2019.
    rendered = rendered.replace(
        "{\n\tservers {", f"{{\n\tadmin 127.0.0.1:{free_port()}\n\tservers {{", 1
    )
    assert f"reverse_proxy {' '.join(upstreams)} {{" in rendered
    assert f"127.0.0.1:{port} {{" in rendered and "admin 127.0.0.1:" in rendered
    conf = tmp / "Caddyfile"
    conf.write_text(rendered)
    return ["caddy", "run", "--config", str(conf), "--adapter", "caddyfile"]


RENDER = {"nginx": render_nginx, "caddy": render_caddy}


def wait_ok(url: str, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer {url}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@contextmanager
def running(name: str, upstreams: list[str], tmp: Path, port: int | None = None) -> Iterator[str]:
    """nginx or caddy with its sample, on 127.0.0.1:port, in front of upstreams ("host:port"
    each, round robin); yields its base URL once /health answers through it."""
    port = port or free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    command = RENDER[name](tmp, upstreams, port)
    log = tmp / f"{name}.log"
    env = {
        **os.environ,
        "HOME": str(tmp),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "XDG_DATA_HOME": str(tmp / "data"),
    }
    process = subprocess.Popen(
        command, cwd=tmp, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ok(f"{base}/health", process, name, log)
        yield base
    finally:
        stop(process)
