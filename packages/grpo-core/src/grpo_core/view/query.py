"""What a rollouts page asks for (``?steps=10-20&reward=total&low=1&suspect=on...``) and the
groups that answer it: the ``grpo rollouts`` filters (:mod:`grpo_core.view.filters`) plus a
reward range, a group shown whole when one of its completions matches."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from grpo_core.base.errors import GrpoError
from grpo_core.view import filters

PAGE = 24  # groups per page


@dataclass(frozen=True)
class Query:
    steps: str | None = None  # "12" or "10-20", as --step
    reward: str = "total"  # the column the range reads: total, or a reward's name
    low: float | None = None
    high: float | None = None
    suspect: bool = False
    empty: bool = False
    where: tuple[str, ...] = ()
    correctness: tuple[str, ...] = ()
    page: int = 1

    @classmethod
    def of(cls, params) -> tuple[Query, list[str]]:
        """The query of a request's parameters, and a sentence for each one that is wrong."""
        problems: list[str] = []

        def number(name: str) -> float | None:
            text = (params.get(name) or "").strip()
            if not text:
                return None
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                problems.append(f"{name}={text!r} is not a number: give one such as 0.5 (or leave it empty).")
                return None
            return value

        steps = (params.get("steps") or "").strip() or None
        if steps is not None:
            try:
                filters.steps(steps)
            except GrpoError as exc:
                problems.append(str(exc).replace("--step", "steps"))
                steps = None
        where = tuple(w.strip() for w in params.getlist("where") if w.strip()) if hasattr(params, "getlist") else ()
        good = []
        for expr in where:
            try:
                filters.where(expr)
                good.append(expr)
            except GrpoError as exc:
                problems.append(str(exc))
        try:
            page = max(1, int(params.get("page") or 1))
        except ValueError:
            page = 1
        correctness = tuple(c.strip() for c in (params.get("correctness") or "").split(",") if c.strip())
        return cls(steps, (params.get("reward") or "total").strip() or "total", number("low"), number("high"),
                   bool(params.get("suspect")), bool(params.get("empty")), tuple(good), correctness, page), problems

    @property
    def filtered(self) -> bool:
        return self.suspect or self.empty or bool(self.where) or self.low is not None or self.high is not None

    def params(self, **change) -> str:
        """The query string of this query (changed as given): links and the pager keep it."""
        q = replace(self, **change)
        pairs = [("steps", q.steps), ("reward", q.reward if q.reward != "total" else None),
                 ("low", _num(q.low)), ("high", _num(q.high)), ("suspect", "on" if q.suspect else None),
                 ("empty", "on" if q.empty else None), *[("where", w) for w in q.where],
                 ("correctness", ",".join(q.correctness) or None), ("page", q.page if q.page > 1 else None)]
        return urlencode([(k, v) for k, v in pairs if v is not None])


def _num(v: float | None) -> str | None:
    return None if v is None else f"{v:g}"


@dataclass
class Group:
    """One group of the log, whole, with the rows a filter picked."""

    step: int
    round: int
    group: int
    rows: list[dict]
    matched: set[int] = field(default_factory=set)  # positions in rows

    @property
    def trained(self) -> bool | None:
        values = {r.get("trained") for r in self.rows}
        return None if values == {None} else bool(values & {True})

    @property
    def prompt(self) -> str:
        return str(self.rows[0].get("prompt", ""))

    @property
    def answer(self):
        return self.rows[0].get("answer")

    @property
    def totals(self) -> list[float]:
        return [r["total"] for r in self.rows if isinstance(r.get("total"), (int, float))]

    @property
    def mean(self) -> float | None:
        t = self.totals
        return sum(t) / len(t) if t else None

    @property
    def spread(self) -> float | None:
        t = self.totals
        return max(t) - min(t) if t else None


def groups_of(rows: list[dict], matched: set[int] | None = None) -> list[Group]:
    """``rows`` as whole groups, in the log's order; ``matched``: ids of the rows picked (a
    group with none is left out), None: every group, nothing marked."""
    out: dict[tuple, Group] = {}
    for r in rows:
        key = filters.group_key(r)
        g = out.get(key)
        if g is None:
            g = out[key] = Group(key[0], key[1] or 0, key[2], [])
        if matched is not None and id(r) in matched:
            g.matched.add(len(g.rows))
        g.rows.append(r)
    return [g for g in out.values() if matched is None or g.matched]


@dataclass
class Selection:
    """What a query found: the page's groups, how many groups and completions answer it, and
    the problems met (a damaged file, a filter that cannot run)."""

    groups: list[Group]
    total: int
    matched: int
    problems: list[str]
    unread: int = 0  # step files not read yet (the page was full before them): the counts are at least


def select(run, q: Query, per_page: int = PAGE) -> Selection:
    """The groups answering ``q`` in ``run``'s log, step file by step file (what a filter found
    in a file is kept with it), only the asked page's groups built."""
    listed = run.log.listing(filters.steps(q.steps))
    problems: list[str] = []
    rows0 = next((e.rows[0] for s, p in listed[:3] if (e := run.log.entry(s, p)).rows), None)  # the log's columns
    correct: list[str] = []
    if q.suspect and rows0:
        correct = list(q.correctness) or run.correctness(sorted(rows0))
        if not correct:
            problems.append("suspect needs a correctness reward: the run's config.yaml declares none that is "
                            "installed; name one in 'correctness' (as grpo rollouts --correctness NAME).")
    column = "total" if q.reward == "total" else f"reward/{q.reward}"
    if rows0 and (q.low is not None or q.high is not None) and column not in rows0:
        names = ", ".join(["total"] + [c[len("reward/"):] for c in rows0 if c.startswith("reward/")])
        problems.append(f"reward {q.reward!r} is not in this log: choose one of {names}.")
    first, last = (q.page - 1) * per_page, q.page * per_page
    shown: list[Group] = []
    total = matched = unread = 0
    for step, path in listed:
        entry = run.log.entry(step, path, read=total < last)  # once the page is full, only what was read counts
        if entry is None:
            unread += 1
            continue
        if entry.error:
            problems.append(entry.error)
        rows = entry.rows or []
        picked = _picked(entry, q, correct, column) if q.filtered else None
        matched += len(picked or ())
        for key, positions in entry.groups:
            hit = [k for k, i in enumerate(positions) if i in picked] if picked is not None else []
            if picked is not None and not hit:
                continue
            if first <= total < last:
                shown.append(Group(key[0], key[1] or 0, key[2], [rows[i] for i in positions], set(hit)))
            total += 1
    if q.where or q.correctness:
        problems += _unknown_columns(run, listed, q)
    return Selection(shown, total, matched, problems, unread)


SCHEMAS = 500  # step files whose columns are read (metadata only) to check a filter's column, at most


def _unknown_columns(run, listed, q: Query) -> list[str]:
    """A sentence for each column the filter names that no file of the log has, with those it
    has (a filter on it matches nothing: it says so instead of showing nothing without a word).
    The files read say; those not read yet are asked for their columns (up to SCHEMAS)."""
    import pyarrow.parquet as pq

    seen: dict[str, None] = {}
    unread = []
    for step, path in listed:
        entry = run.log.entry(step, path, read=False)
        if entry is None:
            unread.append(path)
        else:
            seen.update(dict.fromkeys(entry.columns))
    problems = filters.unknown_columns(q.where, q.correctness, seen) if seen or unread else []
    for path in unread[:SCHEMAS] if problems else ():
        try:
            seen.update(dict.fromkeys(pq.read_schema(path).names))
        except Exception:  # noqa: BLE001 - a damaged file is named when it is read
            continue
    if unread and problems:
        problems = filters.unknown_columns(q.where, q.correctness, seen) if seen else []
    if problems and len(unread) > SCHEMAS:
        problems = [p + f" ({len(unread) - SCHEMAS} step files not looked at yet: reload once the view has read "
                        f"the log)" for p in problems]
    return problems


def _picked(entry, q: Query, correct: list[str], column: str) -> set[int]:
    """Positions of the file's rows that answer ``q``: any of the grpo rollouts filters asked
    (all rows when none is), within the reward range."""
    rows = entry.rows or []

    def positions(test) -> set[int]:
        return {i for i, r in enumerate(rows) if test(r)}

    tests = []
    if q.suspect:
        tests.append(entry.suspects(correct))
    if q.empty:
        tests.append(entry.kept(("empty",), lambda: positions(filters.empty)))
    for expr in q.where:
        tests.append(entry.kept(("where", expr), lambda expr=expr: positions(filters.where(expr)[1])))
    picked = set().union(*tests) if tests else set(range(len(rows)))
    if q.low is None and q.high is None:
        return picked
    low = -math.inf if q.low is None else q.low
    high = math.inf if q.high is None else q.high
    return {i for i in picked if _number(rows[i].get(column)) and low <= rows[i][column] <= high}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


__all__ = ["Query", "Group", "Selection", "groups_of", "select", "PAGE"]
