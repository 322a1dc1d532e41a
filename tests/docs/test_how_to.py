"""docs/how-to.md kept true: the files each step names are where it says (the example's own new
files aside), the tests it cites exist, every test module that names the whole catalog is a step
of "Add a tool", and every product file that words the daily ceiling's window is a step of
"Change how ceilings are counted". "Add a tool" names GigaChat's budget while the smallest new
tool would not fit it, and its fresh-clone recount lists as many files as it counts."""

from __future__ import annotations

import re
from pathlib import Path
from uuid import UUID

from pydantic import Field

from adapters.functions import gigachat
from tests.docs.helpers import DOCS, ROOT, exists, named_paths
from tools.catalog import CATALOG, names
from tools.params import StrictModel
from tools.spec import ToolSpec

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


class _ProbeArgs(StrictModel):
    order_id: UUID = Field(description="Счёт.")
    item_id: str = Field(description="Из списка.")


# The smallest read tool a newcomer could add: two arguments, one-line texts.
PROBE = ToolSpec(
    name="get_probe",
    title="Проба",
    kind="read",
    toolset="read",
    params=_ProbeArgs,
    handler=lambda ctx, params: {},
    description_ru="Показывает одну запись счёта. Ничего не меняет.",
    success_ru="Запись: вот что удалось получить.",
    summary_ru="Одна запись. Только чтение.",
)


def test_adding_a_tool_says_so_when_gigachat_has_no_room_for_one_more():
    # given: the catalog with the smallest tool a newcomer could add at its end
    shown = [f["name"] for f in gigachat.fit([*CATALOG, PROBE])]

    # then: if GigaChat's default budget drops it, the how-to names the budget (the guard of
    # step 6 fails for any new tool, so the step is not "no edit unless they fail")
    if shown != [*names(), PROBE.name]:
        assert "GIGACHAT_FUNCTION_TOKEN_BUDGET" in section("Add a tool")


def test_the_recount_lists_as_many_files_as_it_counts():
    recount = section("Add a tool").split("**Recounted from a fresh clone", 1)[1]
    counted = re.search(r"\*\*(\d+) files\*\*", recount)
    listed = re.findall(r"^\d+\. `([^`]+)`", recount, re.M)

    assert counted and listed
    assert len(set(listed)) == len(listed) == int(counted.group(1))
