"""``/compare``: up to four runs side by side (``?a=0&b=1&c=2&d=3``: their curves overlaid,
any logged figure chosen by ``&figure=kl``, the settings that differ between them), or steps
side by side (``?a_run=0&a_step=1&b_run=1&b_step=40``: their figures and first groups).
A side naming no run of the view (``a=-1``, ``a=9``, ``a=x``) or a figure no run logged is
a 400 that says which runs and figures there are."""

from __future__ import annotations

from grpo_core.view import settings
from grpo_core.view.pages import finite, fmt, page, rewards, step_stats, whole
from grpo_core.view.query import groups_of

SIDES = "abcd"  # up to four runs
COMPARE_GROUPS = 6  # groups of each step on the compare page


def compare(view, request):
    p = request.query_params
    problems: list[str] = []
    sides = []
    bad = False
    last = len(view.runs) - 1
    for name in SIDES:
        given = p.get(f"{name}_run", p.get(name))
        if given is None or (not given.strip() and name not in "ab"):
            if name in "ab":
                problems.append(f"{name}: no run given: compare with ?a=0&b=1 (this view serves runs 0 to {last}; "
                                f"c= and d= add a third and a fourth).")
                bad = True
            continue
        index = whole(given)
        if index is None or index > last:
            problems.append(f"{name}={given[:40]!r} is not a run of this view: give a number from 0 to {last}.")
            bad = True
            continue
        step_text = (p.get(f"{name}_step") or "").strip()
        step = whole(step_text) if step_text else None
        if step_text and step is None:
            problems.append(f"{name}_step={step_text[:40]!r} is not a step number.")
            bad = True
        sides.append(_side(view.runs[index], step, problems))
    runs = list({s["run"].index: s["run"] for s in sides}.values())
    figure = (p.get("figure") or "").strip() or None
    figures = view.figures_of(runs) if runs else []
    if figure and figure not in figures:
        problems.append(f"figure={figure[:80]!r} is not a figure these runs logged; they logged: "
                        f"{', '.join(figures) or 'none yet'}.")
        bad, figure = True, None
    charts = view.charts_of(runs, figure) if len(runs) > 1 or figure else []
    differ, same = [], 0
    if len(runs) > 1 and all(s["step"] is None for s in sides):
        configs = [r.config() for r in runs]
        problems += [f"{r.name}: {c.problem}" for r, c in zip(runs, configs) if c.problem]
        differ, same = settings.differences([c for c in configs])
    here = [(k, v) for k, v in p.multi_items() if k != "figure"]
    return page("compare", "compare", crumbs=[("compare", request.url.path + "?" + request.url.query)],
                problems=problems, sides=sides, charts=charts, runs=runs, figures=figures, figure=figure,
                here=here, differ=differ, same=same, status=400 if bad else 200)


def _side(run, step: int | None, problems: list[str]) -> dict:
    state = run.state()
    problems += [f"{run.name}: {x}" for x in state.problems]
    side = {"run": run, "step": step, "groups": [], "rewards": [], "more": 0}
    if step is None:
        metrics = run.metrics() if state.exists else []
        last = metrics[-1] if metrics else {}
        acc = [r["eval/accuracy"] for r in metrics if finite(r.get("eval/accuracy"))]
        side["stats"] = [("state", state.text()), ("steps logged", len(metrics)),
                         ("last step", last.get("step", "-")), ("last reward", fmt(last.get("reward"))),
                         ("held-out accuracy (last)", fmt(acc[-1]) if acc else "-"),
                         ("tokens", run.tokens() or "-")]
        return side
    rows, more = run.log.rows([step])
    problems += [f"{run.name}: {x}" for x in more]
    if not rows:
        problems.append(f"{run.name} has no rollout log for step {step}.")
    groups = groups_of(rows)
    side.update(stats=step_stats(rows), groups=groups[:COMPARE_GROUPS], rewards=rewards(groups),
                more=len(groups) if len(groups) > COMPARE_GROUPS else 0)
    return side


__all__ = ["compare", "SIDES", "COMPARE_GROUPS"]
