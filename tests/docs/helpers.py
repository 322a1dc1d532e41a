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


FILE_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".json", ".toml", ".html", ".po", ".mo", ".mjs")


def named_paths(text: str) -> list[str]:
    """Repository paths a doc names in backticks: `tools/pipeline/gateway.py`, `audit/`.
    URLs (starting with /), placeholders (<slug>), globs and dotted names are not paths."""
    found = []
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.split("::")[0].rstrip(",.;:")
        if token.startswith(("/", "http", "-", "$", ".")) or re.search(r"[<>*…{}=]", token):
            continue
        if "/" in token or token.endswith(FILE_SUFFIXES):
            found.append(token)
    return found


def missing_paths(text: str, *, base: Path = ROOT) -> list[str]:
    """The named paths that exist neither from the repository's root nor from `base`."""
    return sorted({p for p in named_paths(text)
                   if not (ROOT / p).exists() and not (base / p).exists()})
