"""Adapter package; FORMATS maps a `GET /api/v1/tools?format=` name to its exporter."""

from __future__ import annotations

from adapters.rest.formats import Exporter
from adapters.text.hermes import export as hermes_export

FORMATS: dict[str, Exporter] = {"hermes": hermes_export}
