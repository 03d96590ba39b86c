"""The view's curves, from ``metrics.jsonl``: every number a step logged (TRL's loss, KL,
entropy, gradient norm, completion lengths, clip ratios, learning rate; grpo's rewards,
held-out accuracy, tokens, sampling figures, the prompt sampler's; a plugin's own), drawn
as SVG (:mod:`.svg`).

The figures a reader looks for first have panels of their own (``PANELS``); every other
numeric key is drawn too, grouped by its family (``rewards/*/errors``: one line per reward;
``sampling/all_rounds``: its figures together). One run draws each panel's lines; runs
compared (up to four) draw each panel's headline figure, one line per run, and any figure
asked for by name (``figure()``). Drawn once per version of the files (the app caches)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from grpo_core.view.svg import line_chart

POINTS = 400  # points per line at most
MAX_LINES = 12  # lines in one panel at most (the rest: name the figure to see it)
MAX_PANELS = 60  # panels on a page at most
NOT_FIGURES = {"step", "stage_step", "time"}  # logged numbers that are not curves


@dataclass(frozen=True)
class Chart:
    key: str  # its id on the page
    title: str
    svg: str
    keys: tuple[str, ...] = ()  # the figures it draws


# (key, title, y label, [(metric, label)]): the first metric is the panel's headline (the one
# drawn per run on a compare); "rewards/*/mean" stands for each reward's
PANELS = (
    ("rewards", "Rewards", "reward (mean)", [("reward", "total"), ("rewards/*/mean", "")]),
    ("accuracy", "Held-out accuracy", "accuracy", [("eval/accuracy", "held-out accuracy")]),
    ("loss", "Loss", "loss", [("loss", "loss")]),
    ("kl", "KL to the reference model", "KL", [("kl", "KL")]),
    ("entropy", "Entropy of the policy", "entropy (nats)", [("entropy", "entropy")]),
    ("grad_norm", "Gradient norm", "norm", [("grad_norm", "gradient norm")]),
    ("learning_rate", "Learning rate", "learning rate", [("learning_rate", "learning rate")]),
    ("lengths", "Completion lengths", "tokens", [
        ("completions/mean_length", "mean"), ("completions/min_length", "min"), ("completions/max_length", "max"),
        ("completions/mean_terminated_length", "mean of those that ended"),
        ("completions/min_terminated_length", "min of those that ended"),
        ("completions/max_terminated_length", "max of those that ended")]),
    ("clipped", "Truncated completions", "share", [("completions/clipped_ratio", "share cut at the length limit")]),
    ("clip_ratio", "Clip ratio (importance weights clipped)", "share", [
        ("clip_ratio/region_mean", "region (mean)"), ("clip_ratio/low_mean", "low (mean)"),
        ("clip_ratio/high_mean", "high (mean)"), ("clip_ratio/low_min", "low (min)"),
        ("clip_ratio/high_max", "high (max)")]),
    ("tokens", "What the generated tokens bought", "share of tokens", [
        ("tokens/teaching_share", "teaching share (batch)"), ("tokens/teaching_share_total", "teaching share (run)")]),
    ("generated", "Generated completion tokens", "tokens", [
        ("tokens/generated", "per batch"), ("tokens/generated_total", "in the run")]),
    ("signal", "Learning signal", "share", [("frac_reward_zero_std", "groups with zero spread"),
                                            ("sampling/flat_share_trained", "flat share trained (dynamic)")]),
    ("spread", "Reward spread", "std", [("reward_std", "total"), ("rewards/*/std", "")]),
    # sampling.prompts (a sampler other than TRL's own): what it expected of the prompts it chose, what came back
    ("prompts", "Prompts chosen: pass rates", "share", [
        ("prompts/observed_pass", "observed pass rate"), ("prompts/expected_pass", "expected pass rate"),
        ("prompts/flat_share", "flat groups (all right or all wrong)")]),
    ("difficulty", "Prompts chosen: difficulty (the dataset's knob)", "difficulty",
     [("prompts/difficulty", "difficulty")]),
)
_EACH_REWARD = re.compile(r"^(?P<pre>(?:.*/)?rewards/)(?P<name>[^/]+)/(?P<stat>[^/]+)$")


def columns(rows: list[dict]) -> dict[str, tuple[list[float], list[float]]]:
    """Each key holding a finite number: its (steps, values), keys in the order first logged;
    one pass over the rows (a 10,000-step log of 60 figures is 600,000 values)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for r in rows:
        step = float(r["step"])
        for k, v in r.items():
            t = type(v)
            if (t is float or t is int) and -math.inf < v < math.inf and k not in NOT_FIGURES:
                xy = out.get(k)
                if xy is None:
                    xy = out[k] = ([], [])
                xy[0].append(step)
                xy[1].append(float(v))
    return out


def numeric_keys(rows: list[dict]) -> list[str]:
    """The keys holding a finite number in some row, in the order first logged."""
    seen: dict[str, None] = {}
    for r in rows:
        for k, v in r.items():
            if k not in seen:
                t = type(v)
                if (t is float or t is int) and -math.inf < v < math.inf and k not in NOT_FIGURES:
                    seen[k] = None
    return list(seen)


def _expand(metric: str, label: str, keys: list[str]) -> list[tuple[str, str]]:
    if "*" not in metric:
        return [(metric, label)] if metric in keys else []
    head, tail = metric.split("*")
    return [(k, k[len(head):-len(tail)]) for k in keys if k.startswith(head) and k.endswith(tail)
            and "/" not in k[len(head):-len(tail)]]


def families(keys: list[str]) -> list[tuple[str, str, str, list[tuple[str, str]]]]:
    """Every figure of ``keys`` in a panel: (key, title, y label, [(metric, label)]), the
    ``PANELS`` first, then each other family in the order first logged."""
    out: list[tuple[str, str, str, list[tuple[str, str]]]] = []
    used: set[str] = set()
    for key, title, ylabel, metrics in PANELS:
        lines = [m for metric, label in metrics for m in _expand(metric, label, keys)]
        used.update(m for m, _ in lines)
        if lines:
            out.append((key, title, ylabel, lines))
    others: dict[str, list[tuple[str, str]]] = {}
    for k in keys:
        if k in used:
            continue
        m = _EACH_REWARD.match(k)
        family, label = ((f"{m['pre']}*/{m['stat']}", m["name"]) if m else
                         (k.rsplit("/", 1)[0], k.rsplit("/", 1)[1]) if "/" in k else (k, k))
        others.setdefault(family, []).append((k, label))
    for family, lines in others.items():
        out.append((_id(family), family, family.rsplit("/", 1)[-1], lines))
    return out


def charts(runs: list[tuple[str, list[dict]]], figure: str | None = None) -> list[Chart]:
    """The panels with data; ``runs``: (label, metrics rows). One run: every figure it
    logged. Several: each panel's headline per run, and ``figure`` (a logged key) first."""
    table = [(label, columns(rows)) for label, rows in runs]
    keys = _union([list(cols) for _, cols in table])
    out = []
    if figure:
        out.append(_chart(_id(figure), figure, figure, table, [(figure, figure)]))
    for key, title, ylabel, lines in families(keys)[:MAX_PANELS]:
        if len(runs) > 1:
            if not any(key == p[0] for p in PANELS):
                continue  # a compare draws the panels' headlines (and the figure asked for)
            lines = lines[:1]
            if lines[0][0] == figure:
                continue  # drawn first already
        out.append(_chart(key, title, ylabel, table, lines))
    return [c for c in out if c is not None]


def _chart(key: str, title: str, ylabel: str, runs, lines) -> Chart | None:
    drawn = []
    for label, cols in runs:
        for metric, name in lines:
            xs, ys = cols.get(metric, ((), ()))
            if xs:
                many = len(xs) > POINTS
                xs, ys = thin(xs, ys)
                text = (f"{label}: {name}" if len(runs) > 1 and len(lines) > 1 else label if len(runs) > 1 else name)
                drawn.append((text + (" (means of runs of steps)" if many else ""), xs, ys))
    if not drawn:
        return None
    if len(drawn) > MAX_LINES:
        title = f"{title} (the first {MAX_LINES} of {len(drawn)} lines)"
        drawn = drawn[:MAX_LINES]
    return Chart(key, title, line_chart(title, ylabel, drawn), tuple(m for m, _ in lines))


def thin(xs: list, ys: list, most: int = POINTS) -> tuple[list, list]:
    """At most ``most`` points: the mean of each run of consecutive steps (a chart 460 pixels
    wide shows no more; the trend is kept, single-step noise averaged)."""
    n = len(xs)
    if n <= most:
        return xs, ys
    size = n / most
    outx, outy = [], []
    for k in range(most):
        lo, hi = round(k * size), round((k + 1) * size)
        if hi > lo:
            outx.append(sum(xs[lo:hi]) / (hi - lo))
            outy.append(sum(ys[lo:hi]) / (hi - lo))
    return outx, outy


def _id(name: str) -> str:
    return "figure-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _union(lists: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(k for keys in lists for k in keys))


__all__ = ["Chart", "charts", "columns", "numeric_keys", "families", "thin", "PANELS", "POINTS"]
