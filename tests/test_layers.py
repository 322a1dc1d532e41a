"""The folders show the layers: inbound doors (adapters/) above the core (tools/), the core
above the outbound client (invoicebox/) and the journal (audit/); the sandbox (sandbox/) is a
fake vendor beside the client that nothing of ours imports. Read from the source (ast), every
import statement, also those inside functions."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("adapters", "tools", "audit", "invoicebox", "sandbox", "conformance", "config")

# package -> the packages of ours it may import
MAY_IMPORT = {
    "invoicebox": {"invoicebox"},
    "sandbox": {"sandbox", "invoicebox"},
    "audit": {"audit"},
    "tools": {"tools", "audit", "invoicebox"},
}
# The sandbox may use the API's vocabulary (statuses, signatures, hosts, units) and the client's two
# hooks it plugs into (in-process transport, contour signal), never the client itself.
SANDBOX_MAY_USE = {
    "invoicebox.statuses",
    "invoicebox.notify",
    "invoicebox.hosts",
    "invoicebox.okei",
    "invoicebox.fiscal",
    "invoicebox.signals",
    "invoicebox.client",
}


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # `from invoicebox import statuses` imports the module invoicebox.statuses
            submodules = {
                f"{node.module}.{alias.name}"
                for alias in node.names
                if is_module(f"{node.module}.{alias.name}")
            }
            found |= submodules or {node.module}
    return {name for name in found if name.split(".")[0] in OURS}


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def sources(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts)


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_no_import_runs_back_up_the_layers(package: str):
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in sources(package)
        for name in imports_of(path)
        if name.split(".")[0] not in MAY_IMPORT[package]
    )
    assert wrong == []


def test_the_sandbox_uses_the_apis_vocabulary_not_the_client():
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in sources("sandbox")
        for name in imports_of(path)
        if name.startswith("invoicebox") and name not in SANDBOX_MAY_USE
    )
    client_users = sorted(
        str(path.relative_to(ROOT))
        for path in sources("sandbox")
        if "invoicebox.client" in imports_of(path)
    )
    assert wrong == []
    assert client_users == ["sandbox/apps.py"]  # only to hand in its in-process transport


def test_a_deployment_without_the_sandbox_boots_without_it():
    env = {**os.environ, "GATEWAY_SANDBOX": "false", "DJANGO_SETTINGS_MODULE": "config.settings"}
    probe = (
        "import django; django.setup()\n"
        "from django.apps import apps\n"
        "from django.urls import Resolver404, resolve\n"
        "assert not apps.is_installed('sandbox')\n"
        "try:\n    resolve('/sandbox/invoicebox/v3/billing/api/order/order')\n"
        "except Resolver404:\n    print('not routed')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "not routed"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolved_imports(path: Path) -> set[str]:
    """Every module of ours that `path` imports, relative imports and those inside functions too."""
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            submodules = {
                f"{base}.{alias.name}" for alias in node.names if is_module(f"{base}.{alias.name}")
            }
            found |= submodules or {base}
    return {name for name in found if name.split(".")[0] in OURS and is_module(name)}


def import_graph() -> dict[str, set[str]]:
    return {
        module_name(path): resolved_imports(path) - {module_name(path)}
        for package in OURS
        for path in sources(package)
    }


def loops_in(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        loops.append(sorted(component))
    return loops


def test_the_loop_finder_finds_a_loop_and_only_a_loop():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert loops_in(graph) == [["a", "b", "c"]]
    assert loops_in({"a": {"b"}, "b": set()}) == []


def test_no_import_loop_even_through_imports_inside_functions():
    assert loops_in(import_graph()) == []


def test_no_module_imports_another_modules_private_names():
    wrong = sorted(
        f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
        for package in (*OURS, "harness", "benchmarks")
        for path in sources(package)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert wrong == []
