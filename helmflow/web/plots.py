"""Plots as server-rendered SVG (no script, no CDN): score vs cost with the Pareto front, and
per-scenario bars with their 95% intervals. Every label is escaped: model names are user data."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

PALETTE = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0"]


@dataclass(frozen=True)
class Point:
    label: str
    cost: float
    score: float


def pareto_front(points: list[Point]) -> list[Point]:
    """Points no other point beats on both axes (cheaper or equal *and* better or equal, one strictly)."""
    front = [
        p
        for p in points
        if not any(q.cost <= p.cost and q.score >= p.score and (q.cost < p.cost or q.score > p.score) for q in points)
    ]
    return sorted(front, key=lambda p: (p.cost, p.score))


def _ticks(low: float, high: float, n: int = 5) -> list[float]:
    return [low + (high - low) * i / (n - 1) for i in range(n)]


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _svg_open(width: int, height: int, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}"><title>{escape(title)}</title>'
    )


def _line(x1: float, x2: float, y1: float, y2: float) -> str:
    return f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" class="whisker"/>'


def cost_vs_score_svg(points: list[Point], width: int = 560, height: int = 340) -> Markup:
    if not points:
        return Markup("")
    left, right, top, bottom = 60, 180, 20, 50
    pw, ph = width - left - right, height - top - bottom
    max_cost = max(p.cost for p in points)
    x_high = max_cost * 1.05 if max_cost > 0 else 1.0
    y_low, y_high = min(0.0, min(p.score for p in points)), max(1.0, max(p.score for p in points))

    def x(v: float) -> float:
        return left + pw * v / x_high

    def y(v: float) -> float:
        return top + ph * (1 - (v - y_low) / (y_high - y_low))

    out = [_svg_open(width, height, "Mean score vs total cost per model, with the Pareto front")]
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    for t in _ticks(y_low, y_high):
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>'
        )
    for t in _ticks(0.0, x_high):
        out.append(f'<text x="{x(t):.1f}" y="{top + ph + 16}" text-anchor="middle">{_fmt(t)}</text>')
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 12}" text-anchor="middle" class="axis">'
        f"total cost (USD){' — no cost recorded' if max_cost == 0 else ''}</text>"
    )
    out.append(
        f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle" class="axis">'
        "mean score</text>"
    )
    front = pareto_front(points)
    if len(front) > 1:
        path = " ".join(f"{x(p.cost):.1f},{y(p.score):.1f}" for p in front)
        out.append(f'<polyline points="{path}" class="front"/>')
    for i, p in enumerate(points):
        color = PALETTE[i % len(PALETTE)]
        on_front = p in front
        cls = ' class="on-front"' if on_front else ""
        out.append(
            f'<circle cx="{x(p.cost):.1f}" cy="{y(p.score):.1f}" r="{6 if on_front else 4}" fill="{color}"'
            f"{cls}><title>{escape(p.label)}: score {_fmt(p.score)}, "
            f"cost ${_fmt(p.cost)}</title></circle>"
        )
        ly = top + 14 + 16 * i
        out.append(
            f'<circle cx="{left + pw + 14}" cy="{ly - 4}" r="4" fill="{color}"/>'
            f'<text x="{left + pw + 24}" y="{ly}">{escape(p.label)}{" ★" if on_front else ""}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


@dataclass(frozen=True)
class Bar:
    model: str
    score: float | None
    low: float | None
    high: float | None


def scenario_bars_svg(groups: dict[str, list[Bar]], height: int = 320) -> Markup:
    """One group per scenario, one bar per model, each with its interval as a whisker; wide boards grow wider."""
    if not groups:
        return Markup("")
    models = list(dict.fromkeys(b.model for bars in groups.values() for b in bars))
    left, right, top, bottom = 50, 180, 20, 90
    width = left + right + max(490, len(groups) * max(60, 14 * len(models)))
    pw, ph = width - left - right, height - top - bottom
    group_w = pw / len(groups)
    bar_w = group_w * 0.8 / max(1, len(models))

    def y(v: float) -> float:
        return top + ph * (1 - max(0.0, min(1.0, v)))

    out = [_svg_open(width, height, "Main metric per scenario and model, with 95% intervals")]
    for t in _ticks(0.0, 1.0):
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>'
        )
    for g, (label, bars) in enumerate(groups.items()):
        gx = left + g * group_w + group_w * 0.1
        for b in bars:
            i = models.index(b.model)
            bx = gx + i * bar_w
            color = PALETTE[i % len(PALETTE)]
            if b.score is None:
                out.append(
                    f'<text x="{bx + bar_w / 2:.1f}" y="{y(0) - 4:.1f}" text-anchor="middle" class="missing">×</text>'
                )
                continue
            out.append(
                f'<rect x="{bx:.1f}" y="{y(b.score):.1f}" width="{bar_w * 0.9:.1f}" '
                f'height="{y(0) - y(b.score):.1f}" fill="{color}"><title>{escape(b.model)} on {escape(label)}: '
                f"{_fmt(b.score)}</title></rect>"
            )
            if b.low is not None and b.high is not None:
                cx = bx + bar_w * 0.45
                out.append(
                    _line(cx, cx, y(b.low), y(b.high))
                    + _line(cx - 3, cx + 3, y(b.low), y(b.low))
                    + _line(cx - 3, cx + 3, y(b.high), y(b.high))
                )
        lx, ly = left + g * group_w + group_w / 2, top + ph + 14
        out.append(
            f'<text x="{lx:.1f}" y="{ly}" text-anchor="end" transform="rotate(-30 {lx:.1f} {ly})">'
            f"{escape(label)}</text>"
        )
    for i, m in enumerate(models):
        ly = top + 14 + 16 * i
        out.append(
            f'<rect x="{left + pw + 10}" y="{ly - 9}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
            f'<text x="{left + pw + 24}" y="{ly}">{escape(m)}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


@dataclass(frozen=True)
class Step:
    """One asked item of an adaptive run (a row of ``trajectory.parquet``)."""

    step: int
    instance_id: str
    easiness: float
    score: float
    ability: float
    standard_error: float | None


def ability_trajectory_svg(steps: list[Step], width: int = 560, height: int = 300) -> Markup:
    """An adaptive run's ability after each item, with its ±1.96 SE band, and each asked item at the
    ability where the Rasch model gives it even odds (−easiness): filled when answered right, hollow
    when wrong. The y axis spans the abilities and items, not a band that a saturated run makes huge."""
    if not steps:
        return Markup("")
    left, right, top, bottom = 60, 130, 20, 46
    pw, ph = width - left - right, height - top - bottom
    values = [s.ability for s in steps] + [-s.easiness for s in steps]
    y_low, y_high = min(values), max(values)
    pad = max(0.5, 0.08 * (y_high - y_low))
    y_low, y_high = y_low - pad, y_high + pad
    n = len(steps)

    def x(step: float) -> float:
        return left + pw * ((step - 1) / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return top + ph * (1 - (max(y_low, min(y_high, v)) - y_low) / (y_high - y_low))

    out = [_svg_open(width, height, "Ability after each item asked, with its 95% band, and the items asked")]
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>')
    for t in _ticks(y_low, y_high):
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>'
        )
    for s in steps if n <= 12 else [steps[round(k * (n - 1) / 4)] for k in range(5)]:
        out.append(f'<text x="{x(s.step):.1f}" y="{top + ph + 16}" text-anchor="middle">{s.step}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle" class="axis">item asked</text>')
    out.append(f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle" class="axis">'
               "ability θ</text>")
    banded = [s for s in steps if s.standard_error is not None]
    if len(banded) > 1:
        upper = [f"{x(s.step):.1f},{y(s.ability + 1.96 * (s.standard_error or 0)):.1f}" for s in banded]
        lower = [f"{x(s.step):.1f},{y(s.ability - 1.96 * (s.standard_error or 0)):.1f}" for s in reversed(banded)]
        out.append(f'<polygon points="{" ".join(upper + lower)}" class="band" fill="{PALETTE[0]}" '
                   'fill-opacity="0.15" stroke="none"/>')
    path = " ".join(f"{x(s.step):.1f},{y(s.ability):.1f}" for s in steps)
    out.append(f'<polyline points="{path}" fill="none" stroke="{PALETTE[0]}" stroke-width="2" class="ability"/>')
    for s in steps:
        se = "∞" if s.standard_error is None else _fmt(s.standard_error)
        out.append(f'<circle cx="{x(s.step):.1f}" cy="{y(s.ability):.1f}" r="3" fill="{PALETTE[0]}">'
                   f"<title>after item {s.step}: θ {_fmt(s.ability)} ± {se}</title></circle>")
        right_answer = s.score >= 0.5
        fill = PALETTE[4] if right_answer else "none"
        out.append(
            f'<rect x="{x(s.step) - 4:.1f}" y="{y(-s.easiness) - 4:.1f}" width="8" height="8" fill="{fill}" '
            f'stroke="{PALETTE[4] if right_answer else PALETTE[2]}" class="item">'
            f"<title>item {s.step}: {escape(s.instance_id)}, easiness {_fmt(s.easiness)}, score {_fmt(s.score)}"
            "</title></rect>"
        )
    legend = [(f'<line x1="0" x2="14" y1="-4" y2="-4" stroke="{PALETTE[0]}" stroke-width="2"/>', "ability θ"),
              (f'<rect x="3" y="-8" width="8" height="8" fill="{PALETTE[4]}" stroke="{PALETTE[4]}"/>', "item, right"),
              (f'<rect x="3" y="-8" width="8" height="8" fill="none" stroke="{PALETTE[2]}"/>', "item, wrong")]
    for i, (mark, text) in enumerate(legend):
        ly = top + 14 + 16 * i
        out.append(f'<g transform="translate({left + pw + 10} {ly})">{mark}<text x="20" y="0">{text}</text></g>')
    out.append("</svg>")
    return Markup("".join(out))
