"""Reading the repository's own docs: tables between markers, links, file paths."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def block(text: str, name: str) -> str:
    """The text between `<!-- name:start -->` and `<!-- name:end -->`."""
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"no <!-- {name}:start/end --> block"
    return match.group(1)


def table_rows(text: str) -> list[list[str]]:
    """A Markdown table's body rows, cells stripped of spaces and backticks."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows[2:]]


def links(text: str) -> list[str]:
    """Every Markdown link target, without its #anchor."""
    return [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)]


FILE_SUFFIXES = (".py", ".md")
# Names shaped like paths that are not: MCP methods.
NOT_PATHS = {"tools/list", "tools/call"}
LOCAL_STATE = {"var", "staticfiles", "node_modules", "build", "db.sqlite3"}


def top_level() -> set[str]:
    """The repository's top-level names, without local state (var/, the virtualenv, …)."""
    return {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} - LOCAL_STATE


def named_paths(text: str) -> list[str]:
    """Repository paths a doc names in backticks: `tools/pipeline/gateway.py`, `audit/`,
    `how-to.md`. A path with a slash counts when it starts at one of the repository's top-level
    names; a bare name when it ends in .py or .md. URLs, placeholders (<slug>) and globs are not
    paths; `tools/ops/state.ceiling_usage` names the module tools/ops/state.py."""
    top = top_level()
    found = []
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.split("::")[0].rstrip(",.;:")
        if re.search(r"[<>*…{}=]", token) or token in NOT_PATHS:
            continue
        in_tree = "/" in token and token.split("/")[0] in top
        if in_tree or ("/" not in token and token.endswith(FILE_SUFFIXES)):
            found.append(token)
    return found


def exists(path: str, base: Path) -> bool:
    for root in (ROOT, base):
        if (root / path).exists():
            return True
        module = path.rpartition(".")[0]
        if module and not path.endswith(FILE_SUFFIXES) and (root / f"{module}.py").exists():
            return True
    if "/" not in path:  # a bare file name: somewhere in the repository
        return any(p for p in ROOT.rglob(path) if ".venv" not in p.parts)
    return False


def missing_paths(text: str, *, base: Path = ROOT) -> list[str]:
    """The named paths that exist neither from the repository's root nor from `base`."""
    return sorted({p for p in named_paths(text) if not exists(p, base)})
