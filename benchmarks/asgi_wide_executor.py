"""Experiment only: config.asgi with a larger default thread pool, to test the MCP thread cap."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from config.asgi import application as gateway_application

# MCP tool calls run on the event loop's default executor (asgiref sync_to_async with
# thread_sensitive=False), which asyncio sizes min(32, cpu_count + 4): 6 threads on 2 cores.
# Serving this module (`http_load --app benchmarks.asgi_wide_executor:application`) changes
# only that size, so a throughput jump pins the cap on it. Not for production use.
THREADS = int(os.environ.get("BENCH_EXECUTOR_THREADS", "64"))
_installed: set[int] = set()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    loop = asyncio.get_running_loop()
    if id(loop) not in _installed:
        _installed.add(id(loop))
        loop.set_default_executor(ThreadPoolExecutor(THREADS, thread_name_prefix="wide"))
    await gateway_application(scope, receive, send)
