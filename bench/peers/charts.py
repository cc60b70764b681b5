"""The suites' bar chart: one horizontal bar per (group, peer) value on a log scale, grouped, with its
value printed beside it. Used by the server and gateway reports.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from pathlib import Path


def write_log_bars(
    path: Path,
    bars: list[tuple[str, str, float]],
    *,
    title: str,
    lo: float,
    fmt: Callable[[float], str],
    colors: dict[str, str],
    default_color: str,
    label_width: int,
    group_count: int,
) -> None:
    """`bars`: (group, peer, value) in drawing order; values below `lo` draw as a sliver."""
    width, bar_h, gap = 760, 18, 6
    height = 40 + len(bars) * (bar_h + gap) + 10 * group_count
    top = max((b[2] for b in bars), default=lo * 10)
    span = max(math.log10(max(top, lo * 10)) - math.log10(lo), 1e-9)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<text x="10" y="18" font-size="14">{html.escape(title)}</text>',
    ]
    y, previous = 34, None
    for group, peer, value in bars:
        if group != previous:
            y += 10
            previous = group
        w = max(2.0, (math.log10(max(value, lo)) - math.log10(lo)) / span * (width - label_width - 90))
        parts += [
            f'<text x="10" y="{y + 13}">{html.escape(f"{group} · {peer}")}</text>',
            f'<rect x="{label_width}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{colors.get(peer, default_color)}"/>',
            f'<text x="{label_width + w + 6:.1f}" y="{y + 13}">{fmt(value)}/s</text>',
        ]
        y += bar_h + gap
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n")
