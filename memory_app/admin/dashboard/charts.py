"""Small charts as inline SVG, drawn on the server: no JavaScript, no CDN, no network."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ("#417690", "#e0a030", "#79aec8", "#ba2121", "#5b8c5a", "#8e6fb3")
FONT = 'font-family="sans-serif" font-size="11" fill="currentColor"'


def _nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `value` (axis top)."""
    if value <= 0:
        return 1.0
    step = 1.0
    while step * 10 <= value:
        step *= 10
    for m in (1, 2, 5, 10):
        if m * step >= value:
            return m * step
    return 10 * step


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    parts = []
    for i, name in enumerate(names):
        lx = x + i * 120
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{lx}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{lx + 14}" y="{y}" {FONT}>{escape(name)}</text>')
    return parts


def grouped_bars_svg(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    width: int = 760,
    height: int = 220,
    label_every: int = 5,
) -> SafeString:
    """One group of bars per label (e.g. a day), one bar per series, with a y axis and a legend."""
    names = list(series)
    left, right, top, bottom = 40, 10, 24, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value = _nice_max(max((v for vals in series.values() for v in vals), default=0))
    group_w = plot_w / max(len(labels), 1)
    bar_w = max(group_w * 0.8 / max(len(names), 1), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for frac in (0, 0.5, 1):
        y = top + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ccc"/>')
        value = top_value * frac
        text = f"{value:g}" if value < 10_000 else f"{value / 1000:g}k"
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" {FONT}>{text}</text>')
    for i, label in enumerate(labels):
        gx = left + i * group_w + group_w * 0.1
        for j, name in enumerate(names):
            value = float(series[name][i])
            h = plot_h * value / top_value
            x, y = gx + j * bar_w, top + plot_h - h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[j % len(PALETTE)]}"><title>{escape(label)} · {escape(name)}: {value:g}'
                "</title></rect>"
            )
        if i % label_every == 0 or i == len(labels) - 1:
            cx = left + (i + 0.5) * group_w
            parts.append(
                f'<text x="{cx:.1f}" y="{height - bottom + 14}" text-anchor="middle" {FONT}>'
                f"{escape(label)}</text>"
            )
    parts += _legend(names, left, 14)
    parts.append("</svg>")
    # Safe: every label, name and title was escaped above; the rest are numbers.
    return mark_safe("".join(parts))


def stacked_hbars_svg(
    rows: Mapping[str, Mapping[str, float]], *, title: str, width: int = 760, row_h: int = 26
) -> SafeString:
    """One horizontal bar per row (e.g. a kind of memory), stacked by part (e.g. status)."""
    parts_names = sorted({p for parts in rows.values() for p in parts})
    left, right, top = 90, 60, 24
    height = top + row_h * max(len(rows), 1) + 8
    total_max = max((sum(parts.values()) for parts in rows.values()), default=0) or 1
    plot_w = width - left - right
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (label, parts) in enumerate(rows.items()):
        y = top + i * row_h
        out.append(
            f'<text x="{left - 6}" y="{y + row_h * 0.62:.1f}" text-anchor="end" {FONT}>{escape(label)}</text>'
        )
        x = float(left)
        for j, name in enumerate(parts_names):
            value = float(parts.get(name, 0))
            w = plot_w * value / total_max
            out.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" '
                f'fill="{PALETTE[j % len(PALETTE)]}">'
                f"<title>{escape(label)} · {escape(name)}: {value:g}</title></rect>"
            )
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + row_h * 0.62:.1f}" {FONT}>{sum(parts.values()):g}</text>')
    out += _legend(parts_names, left, 14)
    out.append("</svg>")
    # Safe: labels and names were escaped above; the rest are numbers.
    return mark_safe("".join(out))
