"""docs/design.md is a map of the repository as it is: every path it names exists, and every
concept folder of the core and every door is on it."""

from __future__ import annotations

import re

from tests.docs.helpers import DOCS, ROOT, missing_paths

DESIGN = (DOCS / "design.md").read_text(encoding="utf-8")
LAYOUT = DESIGN.split("## Layout", 1)[1].split("```", 2)[1]


def packages(folder: str) -> list[str]:
    plumbing = {"migrations", "management", "templatetags"}
    return sorted(
        p.name
        for p in (ROOT / folder).iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in plumbing
    )


def listed_under(parent: str) -> set[str]:
    """Folder names the layout lists indented under `parent/`."""
    section = re.search(rf"^{parent}/.*?(?=^\S)", LAYOUT + "\nend", re.S | re.M)
    assert section, f"the layout has no {parent}/"
    return set(re.findall(r"^  (\w+)/", section.group(0), re.M))


def test_every_path_the_design_names_exists():
    assert missing_paths(DESIGN, base=DOCS) == []


def test_every_top_level_folder_of_the_layout_exists():
    top = re.findall(r"^(\w+)/", LAYOUT, re.M)
    assert top and [name for name in top if not (ROOT / name).is_dir()] == []


def test_every_folder_of_the_layout_exists_under_its_parent():
    wrong = [
        f"{parent}/{name}"
        for parent in ("tools", "adapters")
        for name in sorted(listed_under(parent))
        if not (ROOT / parent / name).is_dir()
    ]
    assert wrong == []


def test_every_concept_folder_and_door_is_on_the_map():
    assert sorted(set(packages("tools")) - listed_under("tools")) == []
    assert sorted(set(packages("adapters")) - listed_under("adapters")) == []
