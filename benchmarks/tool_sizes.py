"""Size of each format's tool definitions, from GET /api/v1/tools?format=...&stats=1."""

from __future__ import annotations

import argparse
import time
from typing import Any

from audit.actors import SCAFFOLDING
from benchmarks._common import bench_database, md_table, save, setup_django

# Contours that see more and more of the catalog: what an assistant pays per request grows.
CONTOURS = {
    "read": ["read"],
    "read+write": ["read", "write"],
    "read+write+refund": ["read", "write", "refund"],
}
# The reference server's eight tools (all toolsets, our update_order switched off).
REFERENCE_CONTOUR = "reference 8"
REFERENCE_TOOLS = (
    "lookup_company_by_inn",
    "get_order",
    "find_orders",
    "find_shipments",
    "create_order",
    "cancel_order",
    "create_shipment",
    "create_refund",
)

# InvoiceBox/invoicebox-mcp-server 0.2.1 (4b62bec), its 8 tools, compact JSON: `tools/list` over
# the SDK 1.30.0 client (issue 14 quotes 13 992 for the same list); the function formats are its
# own toFunctions() (src/interop/functions.ts, not served by it) wrapped as each platform takes
# them; hermes is the Qwen template's tools section around those lines (as our tool_line prints
# them). Measured with
# benchmarks/reference_sizes.mjs (see the README).
REFERENCE = {
    "mcp": 13_107,
    "openai": 9_926,
    "openai-strict": 9_926,
    "yandexgpt-openai": 9_926,
    "gigachat": 9_705,
    "gigachat-v2": 9_743,
    "yandexgpt": 9_782,
    "hermes": 10_864,
    "neutral": 13_107,
}
ISSUE_REFERENCE_MCP = 13_992
# A format the reference has no counterpart of (or not measured yet) is still listed, without
# the comparison: a new format needs no entry above.
NO_REFERENCE = "no reference"


def run() -> dict[str, Any]:
    from django.test import Client

    from tools import catalog
    from tools.contours.services import create_contour
    from tools.formats.registry import formats
    from tools.keys.services import issue_key

    http = Client()
    keys = {
        label: issue_key(
            create_contour(f"size-{i}", mode="sandbox", toolsets=toolsets, actor=SCAFFOLDING),
            actor=SCAFFOLDING,
        )
        for i, (label, toolsets) in enumerate(CONTOURS.items())
    }
    reference = create_contour(
        "size-reference", mode="sandbox", toolsets=["read", "write", "refund"], actor=SCAFFOLDING
    )
    reference.disabled_tools = [name for name in catalog.names() if name not in REFERENCE_TOOLS]
    reference.save()
    keys[REFERENCE_CONTOUR] = issue_key(reference, actor=SCAFFOLDING)
    rows = []
    for fmt in sorted(formats()):
        for label, key in keys.items():
            response = http.get(
                "/api/v1/tools", {"format": fmt, "stats": "1"}, HTTP_AUTHORIZATION=f"Bearer {key}"
            )
            assert response.status_code == 200, response.content[:500]
            body = response.json()
            stats = body["stats"]
            rows.append(
                {
                    "format": fmt,
                    "contour": label,
                    "tools": stats["tools_visible"],
                    "characters": stats["characters"],
                    "tokens_estimate": stats["tokens_estimate"],
                    "method": stats.get("token_estimate_method", ""),
                    # Text formats hand back the prompt too: what the model actually reads.
                    "system_prompt_characters": len(body.get("system_prompt") or ""),
                }
            )
    return {"rows": rows, "reference": REFERENCE, "issue_reference_mcp": ISSUE_REFERENCE_MCP}


def render(data: dict[str, Any]) -> str:
    rows = data["rows"]
    method = rows[0]["method"] if rows else ""
    table = [
        [
            r["format"],
            r["contour"],
            r["tools"],
            f"{r['characters']:,}",
            f"{r['tokens_estimate']:,}",
            f"{r['system_prompt_characters']:,}" if r["system_prompt_characters"] else "—",
        ]
        for r in rows
    ]
    reference = data.get("reference", {})
    against = [
        [
            r["format"],
            f"{r['characters']:,}",
            *(
                [f"{reference[r['format']]:,}", f"{r['characters'] / reference[r['format']]:.0%}"]
                if r["format"] in reference
                else [NO_REFERENCE, NO_REFERENCE]
            ),
            f"{r['characters'] / data['issue_reference_mcp']:.0%}",
        ]
        for r in rows
        if r["contour"] == REFERENCE_CONTOUR
    ]
    return (
        f"Token estimate: {method}. The figures are the `stats` of each format: what a "
        "model reads (for `hermes` the system prompt, for the others the whole body).\n\n"
        + md_table(
            [
                "format",
                "contour toolsets",
                "tools",
                "characters",
                "tokens (est.)",
                "system_prompt characters",
            ],
            table,
        )
        + "\n\nAgainst the reference server (its 8 tools; ours with update_order off):\n\n"
        + md_table(
            [
                "format",
                "ours",
                "reference, same format",
                "share",
                f"share of its MCP list as issue 14 gives it ({data['issue_reference_mcp']:,})",
            ],
            against,
        )
    )


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
