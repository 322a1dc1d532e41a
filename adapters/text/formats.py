"""The text format: `?format=hermes` -> its exporter, and what a model reads of it."""

from __future__ import annotations

from adapters.text.prompt import export as hermes_export
from tools.formats.registry import Exporter, Payload

FORMATS: dict[str, Exporter] = {"hermes": hermes_export}
# A model reads the system prompt, not the response body that also lists the tools twice more.
PAYLOADS: dict[str, Payload] = {"hermes": lambda body: body["system_prompt"]}
