"""The rollout log's filters, one set for ``grpo rollouts`` and ``grpo view``: a step or a
range of steps, ``--where COLUMN OP NUMBER``, ``--suspect`` (a correctness reward scores 0
on its group's best total) and ``--empty`` (empty, truncated, or no answer found). A row is
a record of the log (:mod:`grpo_core.runfiles.rollouts`) as a dict."""

from __future__ import annotations

import re
from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.rewards.reward import resolve
from grpo_core.rewards.specs import parse_spec

_WHERE_RE = re.compile(r"^\s*(?P<col>[^<>=!\s]+)\s*(?P<op>>=|<=|==|>|<)\s*(?P<value>-?[\d.]+(?:e-?\d+)?)\s*$")
TEXT_COLUMNS = ("prompt", "completion", "answer", "stage")  # not for --where: it compares numbers
_OPS = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__, "==": float.__eq__}


def steps(text: str | None) -> range | None:
    """``12`` or ``10-20`` as a range of steps (membership is a comparison: a range of
    30 million steps costs nothing); None for no step filter."""
    if text is None:
        return None
    m = re.fullmatch(r"(\d{1,12})(?:-(\d{1,12}))?", text.strip()) if len(text) <= 40 else None
    if not m:
        raise GrpoError(f"--step {text[:40]!r}: give a step (12) or a range (10-20).")
    low, high = int(m[1]), int(m[2] or m[1])
    if high < low:
        raise GrpoError(f"--step {text.strip()!r}: the range ends before it starts; give LOW-HIGH, e.g. {high}-{low}.")
    return range(low, high + 1)


def where(expr: str):
    """``(column, test)`` for ``COLUMN OP NUMBER``; a reward's name reads its score."""
    m = _WHERE_RE.match(expr) if len(expr) <= 200 else None
    try:
        value = float(m["value"]) if m else None
    except ValueError:  # 1.2.3
        value = None
    if value is None or m is None:
        raise GrpoError(f"--where {expr[:200]!r}: write COLUMN OP NUMBER, e.g. 'format.xml_strict>0.5' "
                        f"(ops > >= < <= ==).")
    col, op = m["col"], m["op"]

    def test(row: dict) -> bool:
        v = row.get(f"reward/{col}", row.get(col))
        return isinstance(v, (int, float)) and not isinstance(v, bool) and _OPS[op](float(v), value)

    return col, test


def correctness_names(run: Path, columns: list[str]) -> list[str]:
    """The run's correctness rewards, by their logged names: from its config.yaml's
    rewards resolved now (a reward registered with correctness=True)."""
    import yaml

    logged = {c[len("reward/"):] for c in columns if c.startswith("reward/")}
    cfg = run / "config.yaml"
    specs = []
    if cfg.is_file():
        data = yaml.safe_load(cfg.read_text()) or {}
        specs = list(data.get("rewards") or []) + [s for st in data.get("stages") or [] for s in st.get("rewards", [])]
    out = []
    for spec in specs:
        try:
            parsed = parse_spec(spec)
            name = parsed.alias or resolve(parsed.name).name
            if resolve(parsed.name).correctness and name in logged:
                out.append(name)
        except Exception:  # noqa: BLE001 - a reward no longer installed is simply not counted
            continue
    return sorted(set(out))


def unknown_columns(wheres, correctness, columns) -> list[str]:
    """A sentence for each ``--where`` expression and ``--correctness`` name that names no
    column of the log (``columns``: its column names), with the names there are: such a
    filter would match nothing and say nothing."""
    columns = list(columns)
    rewards = [c[len("reward/"):] for c in columns if c.startswith("reward/")]
    others = [c for c in columns if not c.startswith("reward/") and c not in TEXT_COLUMNS]
    out = []
    for expr in wheres:
        col = where(expr)[0]
        if f"reward/{col}" not in columns and col not in columns:
            out.append(f"--where {expr!r}: this log has no column {col!r}; its rewards are "
                       f"{', '.join(rewards) or '(none)'} and its other columns {', '.join(others)}.")
    for name in correctness:
        if f"reward/{name}" not in columns:
            out.append(f"--correctness {name!r}: this log has no reward {name!r}; its rewards are "
                       f"{', '.join(rewards) or '(none)'}.")
    return out


def group_key(r: dict) -> tuple:
    return r["step"], r.get("round", 0), r["group"]


def suspect(rows: list[dict], correct: list[str]) -> list[dict]:
    """Rows where a correctness reward scores 0 while the row has its group's best total
    (and the group has a spread): what the advantage pushes toward is not right."""
    best: dict = {}
    spread: dict = {}
    rows = [r for r in rows if r.get("trained") is not False]  # dynamic sampling's dropped groups taught nothing
    for r in rows:
        key = group_key(r)
        best[key] = max(best.get(key, float("-inf")), r["total"])
        low = spread.get(key, (r["total"], r["total"]))
        spread[key] = (min(low[0], r["total"]), max(low[1], r["total"]))
    return [r for r in rows if any(r.get(f"reward/{c}") == 0 for c in correct)
            and r["total"] >= best[group_key(r)] - 1e-9 and spread[group_key(r)][1] > spread[group_key(r)][0]]


def empty(row: dict) -> bool:
    answers = [k for k in row if k.startswith("extra/") and k.endswith("/answer")]
    return (not str(row.get("completion") or "").strip() or bool(row.get("truncated"))
            or any(row.get(k) in (None, "") for k in answers))


__all__ = ["steps", "where", "unknown_columns", "correctness_names", "group_key", "suspect", "empty"]
