"""The README's first screen, its links, commands, counts and sizes, against the code.

Counts and sizes are measured here the way a user would (`create_contour`, `create_api_key`,
`GET /api/v1/tools?format=F&stats=1`); when a tool or a description changes, the failure prints
the table to paste between the README's `sizes` markers."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command, get_commands
from django.test import Client

from tests.docs.helpers import DOCS, ROOT, block, links, missing_paths, table_rows
from tools.catalog import CATALOG
from tools.formats.registry import formats

README = (ROOT / "README.md").read_text(encoding="utf-8")
DEMO_TOOLSETS = ("read", "write")  # what seed_demo gives the demo contour
DOC_FILES = sorted([ROOT / "README.md", *DOCS.glob("*.md")])


def test_the_first_screen_says_what_it_is_then_the_two_commands_then_the_map():
    lines = README.splitlines()
    sections = [n for n, line in enumerate(lines) if line.startswith("## ")]
    intro = [line for line in lines[1 : sections[0]] if line.strip()]

    assert lines[sections[0]].startswith("## Two commands")
    assert 2 <= len(intro) <= 4
    assert re.search("[а-яё]", intro[0], re.I), "the intro starts in Russian"
    commands = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert "make demo" in commands and "make test" in commands
    docs_section = lines[sections[1]]
    first_screen = "\n".join(lines[sections[1] : sections[2]])
    assert "Документация" in docs_section
    for page in ("owner-guide.md", "design.md", "api.md", "production.md", "how-to.md"):
        assert f"(docs/{page})" in first_screen, page


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_no_link_leaves_the_repository_and_every_link_lands(path):
    text = path.read_text(encoding="utf-8")
    local = [t for t in links(text) if t and not t.startswith(("http://", "https://", "mailto:"))]

    outside = [t for t in local if not (path.parent / t).resolve().is_relative_to(ROOT)]
    assert outside == [] and [t for t in local if "shared/" in t] == []
    assert [t for t in local if not (path.parent / t).exists()] == []
    assert (
        "../shared" not in text and "shared/API.md" not in text and "shared/DESIGN.md" not in text
    )


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_every_path_a_doc_names_exists(path):
    # production.md and invoicebox-api.md are other rounds' texts: links are checked above,
    # their many example paths (deploy targets, the vendor's repository) are not ours.
    if path.name in {"production.md", "invoicebox-api.md"}:
        pytest.skip("names paths outside the repository on purpose")
    if path.name == "how-to.md":
        pytest.skip("tests/docs/test_how_to.py checks it, the examples' new files aside")
    assert missing_paths(path.read_text(encoding="utf-8"), base=path.parent) == []


def test_every_command_the_docs_name_exists():
    named = set()
    for path in DOC_FILES:
        named |= set(re.findall(r"manage\.py (\w+)", path.read_text(encoding="utf-8")))
    assert sorted(named - set(get_commands()) - {"help"}) == []


def test_the_readme_counts_the_catalog_as_it_is():
    demo = [spec for spec in CATALOG if spec.toolset in DEMO_TOOLSETS]

    assert (
        [int(n) for n in re.findall(r"(\d+)-tool catalog", README)]
        == [len(CATALOG)] * len(re.findall(r"(\d+)-tool catalog", README))
        != []
    )
    assert set(re.findall(r"demo contour sees (\d+)", README)) == {str(len(demo))}
    assert set(re.findall(r"all (\d+) tools", README)) == {str(len(CATALOG))}


def sizes_of(toolsets: str) -> dict[str, tuple[int, int]]:
    slug = f"readme-{toolsets.replace(',', '-')}"
    call_command(
        "create_contour", slug, "--mode", "sandbox", "--toolsets", toolsets, stdout=io.StringIO()
    )
    out = io.StringIO()
    call_command("create_api_key", slug, stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    found = {}
    for fmt in sorted(formats()):
        answer = Client().get(
            "/api/v1/tools", {"format": fmt, "stats": "1"}, HTTP_AUTHORIZATION=f"Bearer {key}"
        )
        assert answer.status_code == 200, answer.content[:300]
        stats = answer.json()["stats"]
        found[fmt] = (stats["characters"], stats["tokens_estimate"])
    return found


@pytest.mark.django_db
def test_the_readme_sizes_are_what_the_formats_measure():
    demo, full = sizes_of(",".join(DEMO_TOOLSETS)), sizes_of("read,write,refund")
    table = "\n".join(
        f"| `{fmt}` | {demo[fmt][0]} / {demo[fmt][1]} | {full[fmt][0]} / {full[fmt][1]} |"
        for fmt in sorted(demo)
        if fmt != "neutral"
    )
    measured = {
        fmt: (f"{demo[fmt][0]} / {demo[fmt][1]}", f"{full[fmt][0]} / {full[fmt][1]}")
        for fmt in demo
        if fmt != "neutral"
    }
    rows = table_rows(block(README, "sizes")) if "<!-- sizes:start -->" in README else []
    documented = {
        row[0].split()[0]: tuple(re.sub(r"\s*\(.*\)", "", cell) for cell in row[1:3])
        for row in rows
    }

    assert documented == measured, "paste between the README's sizes markers:\n" + table
