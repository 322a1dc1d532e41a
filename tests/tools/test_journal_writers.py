"""Every journal event has one writer: audit.journal.record() is called only from audit/,
tools/events.py and tools/pipeline/gateway.py (tool calls); a person's actor string is built only in
audit/actors.py. Read from the source (ast), so a call hidden in a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tools", "adapters", "audit", "config", "conformance", "invoicebox", "sandbox")
# The gateway journals every tool call; call_trace.py is the part of it that writes the entry.
ALLOWED = ("audit/", "tools/events.py", "tools/pipeline/gateway.py", "tools/pipeline/call_trace.py")


def sources() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    )


def record_calls(tree: ast.AST) -> list[int]:
    """Lines calling `journal.record(...)` or a `record` imported from audit.journal."""
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "audit.journal"
        for alias in node.names
        if alias.name == "record"
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "record"
            and isinstance(func.value, ast.Name)
            and func.value.id == "journal"
        ):
            found.append(node.lineno)
        elif isinstance(func, ast.Name) and func.id in imported:
            found.append(node.lineno)
    return found


def user_actor_literals(tree: ast.AST) -> list[int]:
    """Lines of an f-string starting "user:" (a person's actor built by hand)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        and node.values
        and isinstance(node.values[0], ast.Constant)
        and str(node.values[0].value).startswith("user:")
    ]


def test_only_audit_the_events_and_the_gateway_call_journal_record():
    outside = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources()
        if not str(path.relative_to(ROOT)).startswith(ALLOWED)
        for line in record_calls(ast.parse(path.read_text(encoding="utf-8")))
    ]

    assert outside == []


def test_a_persons_actor_string_is_built_in_audit_actors_only():
    built = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources()
        if path != ROOT / "audit" / "actors.py"
        for line in user_actor_literals(ast.parse(path.read_text(encoding="utf-8")))
    ]

    assert built == []


def test_the_checkers_see_a_call_and_an_actor_hidden_in_a_function():
    tree = ast.parse(
        "from audit.journal import record as write\n"
        "def f(user):\n"
        "    write(contour='a')\n"
        "    journal.record(contour='b')\n"
        "    return f'user:{user}'\n"
    )

    assert record_calls(tree) == [3, 4]
    assert user_actor_literals(tree) == [5]
