"""A line chart as SVG text, drawn here rather than by matplotlib: a page of twenty-odd
figures costs milliseconds instead of seconds (matplotlib took 0.1-0.5 s a panel on the shared
cores), and a label is text, never markup or mathtext (a run named ``$x$`` is shown as
written). Axes with round ticks, one polyline per line, dots where there are few points,
the legend under the plot."""

from __future__ import annotations

import math
from html import escape

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")  # matplotlib's tab10, the colours of rewards.png
WIDTH, PLOT_HEIGHT = 460, 170
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 24, 34  # margins around the plot area
LEGEND_ROW = 14
DOTS_BELOW = 30  # points per line under which each point is a dot
LEGEND_CHARS = 40  # a legend entry is clipped to this (its whole text is its tooltip)


def nice_ticks(lo: float, hi: float, most: int = 6, integer: bool = False) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2, 2.5 or 5 times a power of ten
    (whole numbers only when ``integer``), at most about ``most`` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    power = 10 ** math.floor(math.log10((hi - lo) / most))
    step = power * 10
    for candidate in (m * power for m in (1, 2, 2.5, 5, 10)):  # the finest spacing giving at most `most` ticks
        if math.floor(hi / candidate + 1e-9) - math.ceil(lo / candidate - 1e-9) + 1 <= most:
            step = candidate
            break
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    k = 0
    while first + k * step <= hi + step * 1e-9 and k < 50:
        out.append(first + k * step)
        k += 1
    return out


def tick_text(v: float, ticks: list[float]) -> str:
    """A tick's label, with as many decimals as the ticks' spacing needs."""
    if v == 0:
        return "0"
    size = max(abs(t) for t in ticks) if ticks else abs(v)
    if size >= 1e5 or size < 1e-3:
        return f"{v:.2g}"
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(v)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if f"{step:g}".rstrip("0").endswith("25") else 0)
    return f"{v:.{min(decimals, 6)}f}"


def line_chart(title: str, ylabel: str, lines: list[tuple[str, list[float], list[float]]]) -> str:
    """``lines``: (label, steps, values), values finite. The SVG element, its text escaped."""
    xs = [x for _, lx, _ in lines for x in lx]
    ys = [y for _, _, ly in lines for y in ly]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        pad = abs(y0) * 0.1 or 1.0
        y0, y1 = y0 - pad, y1 + pad
    else:
        pad = (y1 - y0) * 0.05
        y0, y1 = y0 - pad, y1 + pad
    xt = [t for t in nice_ticks(x0, x1, 7, integer=True) if x0 <= t <= x1]
    yt = [t for t in nice_ticks(y0, y1, 5) if y0 <= t <= y1]
    rows = math.ceil(len(lines) / 2)
    height = TOP + PLOT_HEIGHT + BOTTOM + rows * LEGEND_ROW + 4
    pw, ph = WIDTH - LEFT - RIGHT, PLOT_HEIGHT

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return TOP + ph - (y - y0) / (y1 - y0) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
           f'height="{height}" font-family="sans-serif" role="img" aria-label="{escape(title)}">',
           f"<title>{escape(title)}</title>",
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fff" stroke="#888" stroke-width="0.8"/>',
           f'<text x="{WIDTH / 2:.0f}" y="15" text-anchor="middle" font-size="12">{escape(title)}</text>']
    for t in yt:
        y = py(t)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
                   f'<text x="{LEFT - 4}" y="{y + 3:.1f}" text-anchor="end" font-size="9">{tick_text(t, yt)}</text>')
    for t in xt:
        x = px(t)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + ph}" stroke="#e3e3e3"/>'
                   f'<text x="{x:.1f}" y="{TOP + ph + 12}" text-anchor="middle" font-size="9">{t:.0f}</text>')
    out.append(f'<text x="{LEFT + pw / 2:.0f}" y="{TOP + ph + 25}" text-anchor="middle" font-size="9">step</text>'
               f'<text x="12" y="{TOP + ph / 2:.0f}" text-anchor="middle" font-size="9" '
               f'transform="rotate(-90 12 {TOP + ph / 2:.0f})">{escape(ylabel)}</text>')
    for n, (label, lx, ly) in enumerate(lines):
        color = COLORS[n % len(COLORS)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(lx, ly))
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.4"/>')
        if len(lx) < DOTS_BELOW:
            out.extend(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{color}"><title>{escape(label)}: '
                       f'step {x:g}, {y:.4g}</title></circle>' for x, y in zip(lx, ly))
        lx_, ly_ = LEFT + (n % 2) * (pw / 2), TOP + ph + BOTTOM + (n // 2) * LEGEND_ROW + 6
        short = label if len(label) <= LEGEND_CHARS else label[:LEGEND_CHARS - 1] + "\u2026"
        out.append(f'<line x1="{lx_:.0f}" x2="{lx_ + 14:.0f}" y1="{ly_:.0f}" y2="{ly_:.0f}" stroke="{color}" '
                   f'stroke-width="2"/><text x="{lx_ + 18:.0f}" y="{ly_ + 3:.0f}" font-size="9">{escape(short)}'
                   f'{"<title>" + escape(label) + "</title>" if short != label else ""}</text>')
    out.append("</svg>")
    return "".join(out)


__all__ = ["line_chart", "nice_ticks", "tick_text", "COLORS"]
