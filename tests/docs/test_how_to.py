"""docs/how-to.md kept true: the files each step names are where it says (the example's own new
files aside), the tests it cites exist, every test module that names the whole catalog is a step
of "Add a tool", and every product file that words the daily ceiling's window is a step of
"Change how ceilings are counted"."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.helpers import DOCS, ROOT, exists, named_paths
from tools.catalog import CATALOG

HOW_TO = (DOCS / "how-to.md").read_text(encoding="utf-8")
# The examples' own files: they exist only on the scratch branch that did the task.
EXAMPLE = re.compile(r"get_refund\b|get_refund\.py|mistral")


def section(title: str) -> str:
    return HOW_TO.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_every_file_a_step_names_exists():
    missing = [
        p
        for p in named_paths(HOW_TO)
        if not exists(p, DOCS) and not (EXAMPLE.search(p) and (ROOT / p).parent.is_dir())
    ]
    assert missing == []


def test_every_test_it_cites_is_defined_where_it_says():
    cited = re.findall(r"`([\w/]+\.py)::(\w+)`", HOW_TO)
    assert cited
    assert [
        f"{path}::{name}"
        for path, name in cited
        if f"def {name}(" not in (ROOT / path).read_text(encoding="utf-8")
    ] == []


def test_every_test_module_that_names_the_whole_catalog_is_a_step_of_adding_a_tool():
    names = [spec.name for spec in CATALOG]
    pinning = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if all(f'"{name}"' in path.read_text(encoding="utf-8") for name in names)
    )
    assert pinning, "no test module names the whole catalog: the scan is broken"
    assert [path for path in pinning if path not in section("Add a tool")] == []


WINDOW = re.compile(r"полноч|полуноч|midnight|kopecks today|за сутки|суточн", re.I)


def product_files() -> list[Path]:
    found = []
    for folder in ("tools", "adapters", "audit", "invoicebox", "templates", "config"):
        found += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.suffix in {".py", ".html"} and "migrations" not in p.parts
        ]
    return found


def test_every_text_that_words_the_daily_window_is_a_step_of_changing_the_ceilings():
    # given: product files that speak of ceilings and of the daily window
    wording = sorted(
        str(p.relative_to(ROOT))
        for p in product_files()
        if WINDOW.search(text := p.read_text(encoding="utf-8"))
        and re.search(r"ceiling|потол", text, re.I)
    )
    assert "tools/pipeline/ceilings.py" in wording  # the scan sees the rule's own home

    # then: the how-to names each of them
    assert [
        path for path in wording if path not in section("Change how ceilings are counted")
    ] == []
