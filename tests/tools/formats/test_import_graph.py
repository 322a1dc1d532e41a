"""Imports run one way: adapters -> tools.formats -> the catalog. Read from the source (ast),
every import statement, also those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
INBOUND = ("functions", "text", "mcp", "rest")
# The seam inbound HTTP adapters share that is not about exports: REST's authenticated base
# view (ContourView) and its envelope serializer, and the one OpenAPI document (its schemes and
# request examples), reused by the other HTTP endpoints.
SHARED_HTTP = frozenset({"adapters.rest.views", "adapters.rest.openapi"})


def imports_of(path: Path, package: str | None = None) -> set[str]:
    """Every module a file imports, by absolute name (relative imports resolved)."""
    if package is None:
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            # `from adapters import functions` imports the module adapters.functions too
            found |= {
                f"{base}.{alias.name}" for alias in node.names if is_module(f"{base}.{alias.name}")
            }
    return found


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def modules(*parts: str) -> list[Path]:
    return sorted(ROOT.joinpath(*parts).rglob("*.py"))


def adapter_of(name: str) -> str | None:
    pieces = name.split(".")
    if len(pieces) >= 2 and pieces[0] == "adapters" and pieces[1] in INBOUND:
        return pieces[1]
    return None


@pytest.mark.parametrize("path", modules("tools"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_and_the_exports_never_import_an_inbound_adapter(path: Path):
    assert sorted(n for n in imports_of(path) if adapter_of(n)) == []


@pytest.mark.parametrize("path", modules("adapters"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_adapter_imports_another_adapters_module_but_the_shared_http_view(path: Path):
    own = path.relative_to(ROOT).parts[1]
    foreign = sorted(
        name
        for name in imports_of(path)
        if adapter_of(name) not in (None, own) and name not in SHARED_HTTP
    )
    assert foreign == []


def test_the_exports_home_is_what_adapters_use_for_schemas_and_formats():
    users = {
        path.relative_to(ROOT).as_posix()
        for path in modules("adapters")
        if any(n.startswith("tools.formats") for n in imports_of(path))
    }

    assert {
        "adapters/functions/openai.py",
        "adapters/functions/gigachat.py",
        "adapters/functions/yandexgpt.py",
        "adapters/text/prompt.py",
        "adapters/mcp/schema.py",
        "adapters/rest/views.py",
    } <= users


def test_the_checker_sees_an_import_hidden_in_a_function(tmp_path: Path):
    # given: the shape of the old circle, REST gathering the adapters' formats lazily
    source = tmp_path / "formats.py"
    source.write_text(
        "def all_formats():\n    from adapters import functions, mcp, text\n"
        "from ..functions.schema import measure\n",
        encoding="utf-8",
    )

    # when
    found = imports_of(source, package="adapters.rest")

    # then
    assert {
        "adapters.functions",
        "adapters.mcp",
        "adapters.text",
        "adapters.functions.schema",
    } <= found
    assert {adapter_of(n) for n in found} >= {"functions", "mcp", "text"}
