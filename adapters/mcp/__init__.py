"""Adapter package; FORMATS maps a `GET /api/v1/tools?format=` name to its exporter."""

from __future__ import annotations

from adapters.rest.formats import Exporter

FORMATS: dict[str, Exporter] = {}
