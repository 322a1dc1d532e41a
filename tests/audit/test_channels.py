"""Journal channels: the one list (audit.models.Channel) and the adapters that declare theirs."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from audit import journal
from audit.models import Channel

ROOT = Path(__file__).resolve().parents[2]
# Every module that declares the channel its calls come in on.
DECLARING = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("adapters", "tools", "invoicebox", "sandbox")
    for path in (ROOT / package).rglob("*.py")
    if "\nCHANNEL = " in path.read_text(encoding="utf-8")
)


def test_the_adapters_declare_their_channels():
    assert {"adapters.functions.openai", "adapters.text.executor", "adapters.rest.views"} <= set(
        DECLARING
    )


@pytest.mark.parametrize("module", DECLARING)
def test_a_declared_channel_is_one_the_journal_accepts(module: str):
    assert importlib.import_module(module).CHANNEL in Channel.values


@pytest.mark.django_db
def test_the_journal_refuses_a_channel_not_on_the_list():
    with pytest.raises(ValueError, match="unknown journal channel 'fax'"):
        journal.record(
            contour="",
            channel="fax",
            actor="test",
            tool="",
            phase="call",
            arguments={},
            status="rejected",
            code="invalid_json",
            message="x",
        )
