"""``grpo view``'s pages, a Starlette application (the framework ``grpo serve`` runs on) with
Jinja2 templates and matplotlib's curves:

- ``/``: the runs served, their state, and a form comparing two;
- ``/run/{i}``: a run's curves (rewards, held-out accuracy, what the tokens bought, the
  learning signal), its health events, its logged steps and the rollouts filter;
- ``/run/{i}/rollouts?steps=&reward=&low=&high=&suspect=on&empty=on&where=&correctness=&page=``:
  the groups answering the filter, whole, side by side, the matching completions marked;
- ``/run/{i}/step/{s}`` and ``/run/{i}/step/{s}/group/{g}?round=r``: one step, one group;
- ``/compare?a=I&b=J`` (two runs) or ``?a_run=I&a_step=S&b_run=J&b_step=T`` (two steps).

Every problem (a missing or half-written run, a damaged Parquet file, a bad filter) is a
sentence on the page, and the server keeps serving. It reads the runs, never writes them.
Other addresses than loopback need a token (``grpo serve``'s rule): a browser gives it once
as ``?token=...`` and keeps it in a cookie.
"""

from __future__ import annotations

import bisect
import hmac
import math
import threading
import time
from dataclasses import replace
from functools import wraps
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from grpo_core.view import charts as drawing
from grpo_core.view import filters
from grpo_core.view.compare import compare
from grpo_core.view.pages import (
    ENV,
    POLICY,
    NotFound,
    finite,
    fmt,
    page,
    rewards,
    step_stats,
    whole,
)
from grpo_core.view.query import PAGE, Query, Selection, groups_of, select
from grpo_core.view.runs import Run
from grpo_core.view.templates import TEMPLATES

COOKIE = "grpo_view_token"
STEP_LINKS = 1000  # step links on a run's page at once (the rest: the pager's earlier / later)


class View:
    """The application's state: the runs (in command-line order) and the token."""

    def __init__(self, runs: list[Run], token: str | None = None):
        self.runs = runs
        self.token = token
        self._charts: dict = {}  # (run indexes, metrics versions) -> charts
        self._drawing = threading.Lock()  # one drawing of a version: a page asking meanwhile waits for it
        self.serving = 0  # pages being served now

    def draw(self) -> None:
        """What the first page would pay, paid at the server's start: the templates compiled,
        each run's curves drawn and its first step file read (pyarrow loaded)."""
        for name in TEMPLATES:
            ENV.get_template(name)
        for run in self.runs:
            try:
                if run.state().exists:
                    self.charts_of([run])
                    _rewards_of(run, [])
            except Exception:  # noqa: BLE001 - the page will say what is wrong; drawing ahead only saves time
                pass

    def warm(self) -> None:
        """Each run's whole log read ahead (a background thread's work): filters then count it
        all. It waits while a page is being served (one interpreter: a page would wait for it)."""
        def give_way():
            time.sleep(0.001)
            while self.serving:
                time.sleep(0.02)

        for run in self.runs:
            run.warm(give_way)

    # -- helpers

    def run(self, request: Request) -> Run:
        i = request.path_params["i"]
        if not 0 <= i < len(self.runs):
            raise NotFound(f"there is no run {i}: this view serves runs 0 to {len(self.runs) - 1}.")
        return self.runs[i]

    def charts_of(self, runs: list[Run], figure: str | None = None) -> list:
        """The runs' curves (``figure``: a logged key drawn first), drawn once per version."""
        return self._kept(("charts", figure), runs, lambda ms: drawing.charts(
            [(r.name, m) for r, m in zip(runs, ms)], figure))

    def figures_of(self, runs: list[Run]) -> list[str]:
        """Every figure one of ``runs`` logged (the compare page's choice), found once per version."""
        return self._kept(("figures",), runs, lambda ms: list(dict.fromkeys(
            k for m in ms for k in drawing.numeric_keys(m))))

    def _kept(self, what: tuple, runs: list[Run], make):
        metrics = [r.metrics() for r in runs]
        key = (*what, *((r.index, len(m), m[-1].get("time") if m else None) for r, m in zip(runs, metrics)))
        with self._drawing:
            if key not in self._charts:
                if len(self._charts) > 32:
                    self._charts.clear()
                self._charts[key] = make(metrics)
            return self._charts[key]

    def authorised(self, request: Request) -> bool:
        if not self.token:
            return True
        given = request.headers.get("authorization", "")
        given = (given[7:] if given.lower().startswith("bearer ") else
                 request.headers.get("x-grpo-token") or request.cookies.get(COOKIE) or "")
        return hmac.compare_digest(given.encode(), self.token.encode())

    # -- pages

    def index(self, request: Request):
        rows = []
        for run in self.runs:
            state = run.state()
            metrics = run.metrics() if state.exists else []
            last = metrics[-1] if metrics else {}
            acc = [r["eval/accuracy"] for r in metrics if finite(r.get("eval/accuracy"))]
            rows.append({"run": run, "state_text": state.text(), "steps": len(metrics),
                         "reward": fmt(last.get("reward")), "accuracy": fmt(acc[-1]) if acc else "-"})
        problems = [f"run {r.index} ({r.name}): {p}" for r in self.runs for p in r.state().problems]
        return page("index", "runs", problems=problems, rows=rows)

    def run_page(self, request: Request):
        run = self.run(request)
        state = run.state()
        steps = run.log.steps() if state.exists else []
        q, problems = Query.of(request.query_params)
        start = whole(request.query_params.get("from"))
        at = bisect.bisect_left(steps, start) if start else 0
        at = at if at < len(steps) else max(0, len(steps) - STEP_LINKS)
        shown = steps[at:at + STEP_LINKS]
        pager = {"earlier": steps[max(0, at - STEP_LINKS)] if at else None,
                 "later": steps[at + STEP_LINKS] if at + STEP_LINKS < len(steps) else None}
        return page("run", run.name, crumbs=[(run.name, f"/run/{run.index}")], problems=state.problems + problems,
                    refresh=30 if state.training else None, run=run, state=state, state_text=state.text(),
                    tokens=run.tokens() if state.exists else None, charts=self.charts_of([run]) if state.exists else [],
                    events=run.events() if state.exists else [], steps=steps, shown_steps=shown, pager=pager,
                    q=q, rewards=_rewards_of(run, steps))

    def config(self, request: Request):
        run = self.run(request)
        config = run.config() if run.state().exists else None
        problems = [f"{run.name}: {config.problem}"] if config and config.problem else []
        return page("config", f"{run.name}: config", crumbs=[(run.name, f"/run/{run.index}"),
                                                           ("config", f"/run/{run.index}/config")],
                    problems=run.state().problems + problems, run=run, config=config)

    def rollouts(self, request: Request):
        run = self.run(request)
        state = run.state()
        q, problems = Query.of(request.query_params)
        found = select(run, q) if state.exists else Selection([], 0, 0, [])
        pages = max(1, math.ceil(found.total / PAGE))
        if q.page > pages and not found.unread:  # past the end (?page=999): the last page, said so
            problems.append(f"page {q.page} is past the last page of this filter ({pages}): page {pages} is shown.")
            q = replace(q, page=pages)
            found = select(run, q)
        where = f"step {q.steps}" if q.steps and "-" not in q.steps else (f"steps {q.steps}" if q.steps else "all steps")
        least = "at least " if found.unread else ""
        groups, completions = _count(found.total, "group"), _count(found.matched, "completion")
        summary = (f"{least}{groups} match ({least}{completions}) in {where}" if q.filtered
                   else f"{least}{groups} in {where}")
        if found.unread:
            summary += (f" ({found.unread} of {len(run.log.listing(filters.steps(q.steps)))} step files not read yet: "
                        f"the view is reading the log; reload for the full count)")
        if found.total > PAGE:
            first = (q.page - 1) * PAGE
            summary += f"; groups {first + 1}-{min(first + PAGE, found.total)} shown"
        return page("rollouts", f"{run.name}: rollouts", crumbs=[(run.name, f"/run/{run.index}"),
                                                               ("rollouts", f"/run/{run.index}/rollouts")],
                    problems=state.problems + problems + found.problems, run=run, q=q,
                    rewards=rewards(found.groups) or _rewards_of(run, []), groups=found.groups, summary=summary,
                    pages=pages)

    def step(self, request: Request):
        run = self.run(request)
        step = request.path_params["s"]
        rows, problems = run.log.rows([step])
        steps = run.log.steps()
        if not rows and not problems:
            raise NotFound(f"step {step} is not in {run.name}'s rollout log" + (
                f" (logged steps: {steps[0]} to {steps[-1]}, {len(steps)} of them)." if steps else " (it has none)."))
        groups = groups_of(rows)
        at = steps.index(step) if step in steps else None
        return page("step", f"{run.name}: step {step}", crumbs=[(run.name, f"/run/{run.index}"),
                                                                (f"step {step}", f"/run/{run.index}/step/{step}")],
                    problems=run.state().problems + problems, run=run, step=step, groups=groups,
                    rewards=rewards(groups), stats=step_stats(rows),
                    prev=steps[at - 1] if at else None, next=steps[at + 1] if at is not None and at + 1 < len(steps)
                    else None)

    def group(self, request: Request):
        run = self.run(request)
        step, number = request.path_params["s"], request.path_params["g"]
        try:
            round_ = int(request.query_params.get("round") or 0)
        except ValueError:
            round_ = 0
        rows, problems = run.log.rows([step])
        found = [g for g in groups_of(rows) if g.group == number and g.round == round_]
        if not found:
            raise NotFound(f"step {step} of {run.name} has no group {number}" + (f" in round {round_}" if round_ else "")
                           + ".")
        g = found[0]
        extras = [k for k in g.rows[0] if k.startswith("extra/")]
        return page("group", f"{run.name}: step {step}, group {number}",
                    crumbs=[(run.name, f"/run/{run.index}"), (f"step {step}", f"/run/{run.index}/step/{step}"),
                            (f"group {number}", request.url.path)],
                    problems=problems, run=run, g=g, rewards=rewards([g]), extras=extras)

    def compare(self, request: Request):
        return compare(self, request)


def _rewards_of(run: Run, steps: list[int]) -> list[str]:
    """The reward names of the log (its first readable step)."""
    for step in (steps or run.log.steps())[:3]:
        rows, _ = run.log.rows([step])
        if rows:
            return [k[len("reward/"):] for k in rows[0] if k.startswith("reward/")]
    return []


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _guarded(view: View, method):
    """The token check, then the page; a problem of the page's own is a page saying so."""
    @wraps(method)
    def endpoint(request: Request) -> Response:
        if view.token:
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given.encode(), view.token.encode()):
                rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
                response.set_cookie(COOKIE, view.token, httponly=True, samesite="strict")
                return response
            if not view.authorised(request):
                return page("index", "token required", status=401, rows=[], problems=[
                    "A token is required: open this address once with ?token=TOKEN (a cookie keeps it), or send "
                    "'Authorization: Bearer TOKEN'."])
        view.serving += 1  # (a count the background reader only reads: no lock needed for its purpose)
        try:
            return method(request)
        except NotFound as exc:
            return page("index", "not found", status=404, rows=[], problems=[str(exc)])
        except Exception as exc:  # noqa: BLE001 - one page failing must not stop the view
            return page("index", "error", status=500, rows=[], problems=[
                f"This page failed: {type(exc).__name__}: {str(exc)[:300]}. The view goes on serving; the other pages "
                f"and runs are unaffected."])
        finally:
            view.serving -= 1
    return endpoint


async def _not_found(request: Request, exc) -> Response:
    return page("index", "not found", status=404, rows=[], problems=[
        f"no page {request.url.path}: see / for the runs served."])


def build_app(view: View) -> Starlette:
    g = lambda m: _guarded(view, m)  # noqa: E731
    routes = [Route("/", g(view.index)), Route("/run/{i:int}", g(view.run_page)),
              Route("/run/{i:int}/config", g(view.config)),
              Route("/run/{i:int}/rollouts", g(view.rollouts)), Route("/run/{i:int}/step/{s:int}", g(view.step)),
              Route("/run/{i:int}/step/{s:int}/group/{g:int}", g(view.group)), Route("/compare", g(view.compare))]
    app = Starlette(routes=routes, exception_handlers={404: _not_found})
    app.state.view = view
    return app


__all__ = ["View", "build_app", "page", "step_stats", "POLICY"]
