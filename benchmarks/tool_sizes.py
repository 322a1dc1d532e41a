"""Size of each format's tool definitions, from GET /api/v1/tools?format=...&stats=1."""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks._common import bench_database, md_table, save, setup_django

# Contours that see more and more of the catalog: what an assistant pays per request grows.
CONTOURS = {"read": ["read"], "read+write": ["read", "write"],
            "read+write+refund": ["read", "write", "refund"]}


def run() -> dict[str, Any]:
    from django.test import Client

    from tools.contours import create_contour, issue_key
    from tools.exports.registry import formats

    http = Client()
    keys = {label: issue_key(create_contour(f"size-{i}", mode="sandbox", toolsets=toolsets))
            for i, (label, toolsets) in enumerate(CONTOURS.items())}
    rows = []
    for fmt in sorted(formats()):
        for label, key in keys.items():
            response = http.get("/api/v1/tools", {"format": fmt, "stats": "1"},
                                HTTP_AUTHORIZATION=f"Bearer {key}")
            assert response.status_code == 200, response.content[:500]
            body = response.json()
            stats = body["stats"]
            rows.append({"format": fmt, "contour": label, "tools": stats["tools_visible"],
                         "characters": stats["characters"],
                         "tokens_estimate": stats["tokens_estimate"],
                         "method": stats.get("token_estimate_method", ""),
                         # Text formats hand back the prompt too: what the model actually reads.
                         "system_prompt_characters": len(body.get("system_prompt") or "")})
    return {"rows": rows}


def render(data: dict[str, Any]) -> str:
    rows = data["rows"]
    method = rows[0]["method"] if rows else ""
    table = [[r["format"], r["contour"], r["tools"], f"{r['characters']:,}",
              f"{r['tokens_estimate']:,}",
              f"{r['system_prompt_characters']:,}" if r["system_prompt_characters"] else "—"]
             for r in rows]
    return (f"Token estimate: {method}. The figures are the `stats` of the whole response body; "
            "a text format's body also carries its `system_prompt` (and the definitions in "
            "more than one form), so for those the last column is what a model reads.\n\n"
            + md_table(["format", "contour toolsets", "tools", "characters", "tokens (est.)",
                        "system_prompt characters"], table))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args(argv)
    started = time.monotonic()
    with bench_database("sqlite", "sizes") as url:
        setup_django(url)
        data = run()
    save("tool_sizes", data, render(data), started)


if __name__ == "__main__":
    main()
