"""docs/owner-guide.md: the road in the order the issue asks for, and every command it tells the
owner to run exists with the options it names."""

from __future__ import annotations

import re

from django.core.management import get_commands, load_command_class

from tests.docs.helpers import DOCS, ROOT

GUIDE = (DOCS / "owner-guide.md").read_text(encoding="utf-8")


def test_the_road_goes_second_factor_people_write_ceilings_key_connectors_auditor():
    headings = [line.lower() for line in GUIDE.splitlines() if line.startswith("## ")]
    order = [
        "второй фактор",
        "люди",
        "запись",
        "потолки",
        "ключ ассистента",
        "коннекторы",
        "аудитор",
    ]
    places = [next((n for n, h in enumerate(headings) if word in h), None) for word in order]

    assert None not in places, dict(zip(order, places, strict=True))
    assert places == sorted(places)


def test_four_eyes_names_both_the_issuer_and_the_holder():
    assert (
        "ни\nтот, кто ключ выдал, ни тот, кто его держит" in GUIDE
        or "ни тот, кто ключ выдал, ни тот, кто его держит" in " ".join(GUIDE.split())
    )


def options_of(command: str) -> set[str]:
    parser = load_command_class(get_commands()[command], command).create_parser(
        "manage.py", command
    )
    return {option for action in parser._actions for option in action.option_strings}


def test_every_command_it_names_takes_the_options_it_names():
    calls = re.findall(
        r"manage\.py (\w+)((?:[ \t]+(?:\\\n\s*)?[^\s#`]+)*)", " ".join(GUIDE.split("\\\n"))
    )
    assert len(calls) >= 10
    wrong = [
        f"{command} {option}"
        for command, rest in calls
        for option in re.findall(r"(?<!\S)(--[\w-]+)", rest)
        if option not in options_of(command)
    ]
    assert wrong == []


def test_the_offline_verifier_it_names_is_in_the_repository():
    assert "tools/verify_export.py" in GUIDE and (ROOT / "tools" / "verify_export.py").exists()
