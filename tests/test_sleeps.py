"""No test sleeps to move time (issue 38 item 8): time moves with the `clock` fixture
(tests/conftest.py) or, across processes, on the database's clock (a row made older).

What may still sleep is a wait for something real: a poll inside a loop (a server starting, a
log line, a retry after duplicate_call), or one of the few fixed pauses listed below that let
bytes reach a real server. Read from the source (ast), so a new fixed sleep fails here."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SLEEPS = {("time", "sleep"), ("asyncio", "sleep"), ("anyio", "sleep")}
# Fixed pauses outside a loop, each waiting for a real server (never for the clock to move).
FIXED = {
    # the slow uploads reach the served gateway before /health is asked
    "adapters/test_bounded_body.py": 1,
    # two admitted calls reach the served gateway before three more arrive; the asyncio ones
    # only let queued tasks run in order (0.01 s each)
    "adapters/test_inflight.py": 4,
    # the request's bytes reach the sandbox before the worker is killed
    "system/test_cluster.py": 1,
}


def fixed_sleeps(tree: ast.AST) -> int:
    found = 0

    def visit(node: ast.AST, in_loop: bool) -> None:
        nonlocal found
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            in_loop = False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in SLEEPS and not in_loop:
                found += 1
        loop = isinstance(node, ast.While | ast.For | ast.AsyncFor)
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop or loop)

    visit(tree, False)
    return found


def test_no_test_sleeps_except_to_wait_for_something_real():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        count = fixed_sleeps(ast.parse(path.read_text(encoding="utf-8")))
        if count:
            found[str(path.relative_to(TESTS))] = count

    assert found == FIXED


def test_the_check_sees_a_fixed_sleep_and_lets_a_poll_pass():
    fixed = "import time\ndef test():\n    time.sleep(3.2)\n"
    poll = "import time\ndef test():\n    while True:\n        time.sleep(0.1)\n"
    nested = (
        "import asyncio\nasync def test():\n    for _ in x:\n"
        "        def f():\n            asyncio.sleep(1)\n"
    )

    assert [fixed_sleeps(ast.parse(s)) for s in (fixed, poll, nested)] == [1, 0, 1]
