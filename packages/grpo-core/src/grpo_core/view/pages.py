"""What every page of ``grpo view`` is made with: the templates' environment and the one way
a page is answered (its problems as sentences, the content policy), a step's figures, and the
number formats."""

from __future__ import annotations

import math

import jinja2
from starlette.responses import HTMLResponse

from grpo_core.view.query import groups_of
from grpo_core.view.templates import TEMPLATES

# no script, nothing from elsewhere: the pages show the model's text and nothing may run from it
POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
          "base-uri 'none'; frame-ancestors 'none'")

ENV = jinja2.Environment(loader=jinja2.DictLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined)


class NotFound(Exception):
    pass


def page(name: str, title: str, *, crumbs=(), problems=(), refresh=None, status: int = 200, **values) -> HTMLResponse:
    html = ENV.get_template(name).render(title=title, crumbs=list(crumbs), problems=list(problems), refresh=refresh,
                                         **values)
    return HTMLResponse(html, status_code=status, headers={"Content-Security-Policy": POLICY})


def step_stats(rows: list[dict]) -> list[tuple[str, str]]:
    """A step's figures, for its page and the compare page."""
    if not rows:
        return []
    groups = groups_of(rows)
    out = [("completions", str(len(rows))), ("groups", str(len(groups)))]
    trained = [g.trained for g in groups if g.trained is not None]
    if trained:
        out.append(("groups trained", f"{sum(trained)} of {len(trained)}"))
    out.append(("mean total", fmt(mean([r.get("total") for r in rows]))))
    for name in rewards(groups):
        out.append((f"mean {name}", fmt(mean([r.get(f"reward/{name}") for r in rows]))))
    out.append(("teaching completions (advantage not 0)",
                f"{sum(1 for r in rows if finite(r.get('advantage')) and r['advantage'] != 0)} of {len(rows)}"))
    out.append(("mean tokens", fmt(mean([r.get("tokens") for r in rows]), 1)))
    out.append(("truncated", f"{sum(bool(r.get('truncated')) for r in rows)} of {len(rows)}"))
    return out


def rewards(groups) -> list[str]:
    """The reward names of these groups' rows."""
    for g in groups:
        return [k[len("reward/"):] for k in g.rows[0] if k.startswith("reward/")]
    return []


def finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def mean(values) -> float | None:
    vals = [v for v in values if finite(v)]
    return sum(vals) / len(vals) if vals else None


def fmt(v, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if finite(v) else "-"


def whole(text) -> int | None:
    """A non-negative whole number from a query parameter, or None (also for -1, 1e3, 10**5000)."""
    text = (text or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None


__all__ = ["POLICY", "ENV", "NotFound", "page", "step_stats", "rewards", "finite", "mean", "fmt", "whole"]
