"""The JSON renderer of every assistant endpoint."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rest_framework.renderers import JSONRenderer


class SafeJSONRenderer(JSONRenderer):
    """DRF's renderer encodes to UTF-8 after dumping, so an echoed lone surrogate ("\\ud800")
    is a UnicodeEncodeError and a 500. Such a value is written as its JSON escape instead."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return json.dumps(
                data, cls=self.encoder_class, ensure_ascii=True, allow_nan=not self.strict
            ).encode("ascii")
