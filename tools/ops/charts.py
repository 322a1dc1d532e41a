"""Server-side SVG charts for the dashboard: no JavaScript, no build step, nothing fetched."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

CALLS_COLOUR = "#3b6fb6"
REFUSALS_COLOUR = "#c0392b"
TRACK_COLOUR = "#e6e9ef"


@dataclass(frozen=True)
class Bar:
    """One bucket: its axis label, the tooltip heading, calls and the refusals among them."""

    label: str
    heading: str
    calls: int
    refusals: int


def nice_ceiling(value: int) -> int:
    """The axis top: 1, 2 or 5 times a power of ten, at least value (and at least 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


def bar_chart(bars: Sequence[Bar], *, title: str, label_every: int) -> SafeString:
    """Stacked bars (refusals at the foot, in red) with a y axis of 0, half and top."""
    width, height = 720, 170
    left, right, top, bottom = 34, 6, 8, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    axis_top = nice_ceiling(max((bar.calls for bar in bars), default=0))
    slot = plot_w / max(len(bars), 1)
    calls = sum(bar.calls for bar in bars)
    refusals = sum(bar.refusals for bar in bars)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'class="chart" role="img" data-calls="{calls}" data-refusals="{refusals}" '
        f'aria-label="{escape(title)}: вызовов {calls}, отказов {refusals}">',
        f"<title>{escape(title)}</title>",
    ]
    for fraction in (0, 0.5, 1):
        y = top + plot_h * (1 - fraction)
        text = f"{axis_top * fraction:g}"
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{TRACK_COLOUR}"/>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" '
            f'font-size="11" fill="#555">{text}</text>'
        )
    for index, bar in enumerate(bars):
        x = left + index * slot + slot * 0.15
        bar_w = slot * 0.7
        total_h = plot_h * bar.calls / axis_top
        refused_h = plot_h * bar.refusals / axis_top
        base = top + plot_h
        tooltip = f"{bar.heading}: вызовов {bar.calls}, отказов {bar.refusals}"
        parts.append(
            f'<g class="bar" data-calls="{bar.calls}" data-refusals="{bar.refusals}">'
            f"<title>{escape(tooltip)}</title>"
        )
        if bar.calls > bar.refusals:
            parts.append(
                f'<rect x="{x:.1f}" y="{base - total_h:.1f}" width="{bar_w:.1f}" '
                f'height="{total_h - refused_h:.1f}" fill="{CALLS_COLOUR}"/>'
            )
        if bar.refusals:
            parts.append(
                f'<rect x="{x:.1f}" y="{base - refused_h:.1f}" width="{bar_w:.1f}" '
                f'height="{refused_h:.1f}" fill="{REFUSALS_COLOUR}"/>'
            )
        parts.append("</g>")
        # Counted back from the last bar (now), so "now" is always labelled and spacing even.
        if (len(bars) - 1 - index) % label_every == 0:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{height - 6}" text-anchor="middle" '
                f'font-size="11" fill="#555">{escape(bar.label)}</text>'
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above went through escape()


def usage_bar(used: int, limit: int) -> SafeString:
    """A thin horizontal gauge: the share of a ceiling used, red from 90 %."""
    share = 1.0 if limit == 0 else min(used / limit, 1.0)
    colour = REFUSALS_COLOUR if share >= 0.9 else CALLS_COLOUR
    return mark_safe(  # noqa: S308 - numbers only
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 12" class="gauge" '
        f'role="img" aria-label="{share * 100:.0f} %">'
        f'<rect width="200" height="12" rx="3" fill="{TRACK_COLOUR}"/>'
        f'<rect width="{200 * share:.1f}" height="12" rx="3" fill="{colour}"/></svg>'
    )
