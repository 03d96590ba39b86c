"""Test the rewards before the GPU, without a model (``grpo check``).

Two questions cost whole runs when their answer is wrong:

1. **Gold self-test**: does each reward give full marks to the right answer,
   written the way the prompt asks for it? For every dataset row (up to a
   limit) the ideal completion is the system prompt's answer template filled
   with the gold answer (what a few-shot example shows); each reward scores it.
   A correctness reward (one registered with ``correctness=True``, such as
   ``math.correctness``) below 99 % at its maximum is a failure: its gold column
   cannot be read. The maximum is the one the reward declares when it registers
   (``range=(low, high)``), never the best a row happened to score.
2. **Reward-hacking probes**: does a reward pay for something that is not an
   answer? :data:`PROBES` builds adversarial completions from sampled rows
   (a hedge, the question copied back, the gold only in the reasoning, ...).
   Judged per row: a probe without the right answer that a reward reading
   answers pays as much as the gold on more than :data:`PROBE_SHARE` of the rows,
   or whose weighted total beats the gold's on more than that share, is a failure.
   A reward reads answers when it is a correctness reward, or when it pays the
   gold more than a wrong answer written the same way (both :func:`wrong_answer`
   and :func:`shifted`, on more than that share of the rows): a containment
   reward that pays any text holding the gold does, a format or length reward
   that pays the gold and a wrong answer alike does not. A reward that reads
   answers but is not meant to judge them (a topic or mention reward) is marked
   ``reads_answers=False`` when registered, or by that attribute on its function.
   Plugins add probes with the ``register_probes`` hook.
3. **No signal**: a reward that gives the gold and every probe the same value
   (a tag reward whose tags differ from the prompt's pays 0 to all) teaches
   nothing, and fails.

A group reward (``rewards/groups.py``) scores each row's completions (the gold, the
wrong answers, the probes) as one group, as it would a prompt's completions in
training; its gold self-test, a gold alone in its group, is not judged.

Rewards are called in batches of :data:`CHECK_BATCH`, through training's failure
policy (``rewards/policy.py:CheckGuard``): each call within the reward's time limit
(one that runs past it is reported once and not judged), an item that raises or
returns no number scores None and is not judged, each kind named once for the run.
4. **Failures**: a reward failing on more than ``health.max_reward_errors`` of the
   completions tried fails, as training would stop on it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grpo_core.checks.probes import (
    TRL_TEMPLATE,
    Probe,
    ProbeRow,
    all_probes,
    gold_of,
    shifted,
    wrong_answer,
)
from grpo_core.checks.report import (
    CheckReport,
    GoldResult,
    HedgePaid,
    ProbeResult,
    RewardErrors,
    format_report,
    summary_line,
)
from grpo_core.data.datasets import check_columns, resolve_system_prompt
from grpo_core.plugin import registry
from grpo_core.rewards.policy import PolicySettings
from grpo_core.rewards.scoring import needs_model, score_batch, weighted_totals

GOLD_LIMIT = 2_000


PROBE_ROWS = 16




# a probe may pay as much as the gold on at most this share of the probe rows (1 of 16)
PROBE_SHARE = 0.1


CHECK_BATCH = 256  # completions per reward call, as a training batch would be (time limits apply per call)


def is_correctness(reward) -> bool:
    """Rewards whose maximum means "the answer is right" (declared when registered)."""
    return bool(getattr(reward, "correctness", False))


def declared_reads_answers(reward) -> bool | None:
    """What a reward declares about reading answers: ``register(..., reads_answers=...)``,
    or a ``reads_answers`` attribute on its function; None when it declares nothing."""

    for obj in (reward, getattr(reward, "func", None)):
        value = getattr(obj, "reads_answers", None)
        if isinstance(value, bool):
            return value
    if not getattr(reward, "source", ""):  # a function of one's own: its attribute is all it declares
        return None
    entry = registry.rewards().entries.get(getattr(reward, "name", ""))  # ("": no entry's name)
    value = entry.extra.get("reads_answers") if entry is not None else None
    return value if isinstance(value, bool) else None


def _score(guards: Sequence, texts: list[str], rows: list[dict],
           group_size: int = 1) -> tuple[list[list], dict[str, list], list[list]]:
    """Per reward (each under its :class:`CheckGuard`), the scores of ``texts`` (as
    assistant messages, like training), what rewards logged per completion (e.g. the
    extracted answer) and which items failed (raised or scored no number: not judged).
    A reward model is not loaded: it scores None. ``group_size``: the texts come in groups
    of one row's completions, which a group reward scores together."""

    per: list[list] = [[] for _ in guards]
    failed: list[list] = [[] for _ in guards]
    extras: dict[str, list] = {}
    step = max(1, CHECK_BATCH // group_size) * group_size  # whole groups per call
    for start in range(0, len(texts), step):  # batches the size training scores at once
        chunk = slice(start, start + step)
        completions = [[{"role": "assistant", "content": t}] for t in texts[chunk]]
        marks = [len(g.why) for g in guards]
        scored = score_batch(guards, [1.0] * len(guards), completions, rows[chunk],
                             [r.get("prompt") for r in rows[chunk]], skip_model_rewards=True,
                             group_size=group_size)
        for column, values in zip(per, scored.per_reward):
            column.extend(values)
        for lost, g, mark in zip(failed, guards, marks):  # a reward skipped (uncalled) failed nowhere
            why = g.why[mark:]
            lost.extend([w is not None for w in why] + [False] * (len(completions) - len(why)))
        for key in set(extras) | set(scored.extras):
            got = scored.extras.get(key, [])
            extras.setdefault(key, [None] * start).extend(list(got) + [None] * (len(completions) - len(got)))
    return per, extras, failed


def _guards(funcs: Sequence, guards: Sequence | None) -> Sequence:
    """The check's guards of ``funcs`` (default: training's policy with its default settings)."""
    return guards if guards is not None else PolicySettings().guard_check(list(funcs))


def _mean(values) -> float:
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(vals) / len(vals) if vals else math.nan


def top_of(reward, scores: Sequence) -> float:
    """Full marks: the declared maximum (``register(..., range=(low, high))``); 1.0 for
    a correctness reward that declares none; else the best the gold scored."""
    declared = getattr(reward, "range", None)
    if declared is not None:
        return declared[1]
    if is_correctness(reward):
        return 1.0
    finite = [s for s in scores if s is not None]
    return max(finite) if finite else math.nan


def _skipped(reward, rows: Sequence[dict] = ()) -> str | None:
    if rows and is_correctness(reward) and not any(gold_of(r).strip() for r in rows):
        # e.g. open-r1's code rows: stdin/stdout cases in verification_info, no reference solution
        return "the rows have no gold answer ('answer' or 'solution' column): not checked"
    if getattr(reward, "timed_out", False):
        return f"ran past its time limit ({reward.time_limit:g}s): not checked"
    if needs_model(reward):
        return "loads a model: not checked"
    return None


def gold_self_test(funcs: Sequence, rows: list[dict], template, guards: Sequence | None = None) -> list[GoldResult]:
    """Each reward's share of rows whose gold it scores at full marks, over the rows it
    did not fail on (those are counted apart: :class:`RewardErrors`)."""
    probes = [ProbeRow(r, gold_of(r), "", template) for r in rows]
    texts = [p.fill(p.gold) for p in probes]
    per, extras, failed = _score(_guards(funcs, guards), texts, rows)
    out = []
    for f, scores, lost in zip(funcs, per, failed):
        name = f.__name__
        judged = [i for i, x in enumerate(lost) if not x]
        top = top_of(f, [scores[i] for i in judged])
        at_top = {i: scores[i] is not None and scores[i] >= top - 1e-9 for i in judged}
        extracted = extras.get(f"{name}/answer") or [None] * len(rows)
        short = [{"row": i, "gold": probes[i].gold, "completion": texts[i][:200], "extracted": extracted[i],
                  "score": scores[i]} for i, ok in at_top.items() if not ok]
        skipped = (_skipped(f, rows) or (GROUP_GOLD if getattr(f, "group", False) else None)
                   or (None if judged or not rows else "failed on every row: not judged"))
        out.append(GoldResult(name, top, sum(at_top.values()) / len(at_top) if at_top else math.nan, is_correctness(f),
                              [] if skipped else short, skipped))
    return out


# why a group reward's gold self-test is not judged (each row's gold is a group of its own)
GROUP_GOLD = "a group reward: a gold alone is a group of one; judged with the probes (a row's completions as one group)"


def _pays_as_much(probe: Sequence, gold: Sequence, floor: float = 0.0) -> list[int]:
    """Rows where the probe scores at least what the gold does (the gold paying above ``floor``)."""
    return [i for i, (p, g) in enumerate(zip(probe, gold))
            if p is not None and g is not None and g > floor + 1e-9 and p >= g - 1e-9]


def _judge(probe: Probe, rows: list[dict], ids: Sequence[int], per: dict[str, list], totals: list[float],
           gold: dict[str, list], gold_totals: list[float], judged: Sequence[str],
           floors: dict[str, float]) -> tuple[list[str], list[str]]:
    """(failures, the rewards that pay it): a probe fails a reward reading answers
    (``judged``) that pays it as much as the gold on more than PROBE_SHARE of the rows
    (without the right answer), or when its weighted total beats the gold's on more than
    PROBE_SHARE of the rows. Judged per row, not on means."""
    n, failures, paid_by = len(rows), [], []
    limit = PROBE_SHARE * n
    if not probe.right:
        for name in judged:
            hits = _pays_as_much(per[name], gold[name], floors[name])
            if len(hits) > limit:
                paid_by.append(name)
                failures.append(f"{name} pays it as much as the gold on {len(hits)} of {n} rows "
                                f"({_rows(hits, rows, ids)})")
    above = [i for i, (t, g) in enumerate(zip(totals, gold_totals)) if t > g + 1e-9]
    if len(above) > limit:
        failures.append(f"its total beats the gold's on {len(above)} of {n} rows ({_rows(above, rows, ids)})")
    return failures, paid_by


def _readers(funcs: Sequence, n: int, gold: dict[str, list], wrongs: list[dict[str, list]]) -> dict[str, int]:
    """The rewards that read answers, each with the rows where it pays the gold more than
    every wrong answer of ``wrongs`` (written the way the gold is): correctness rewards,
    those declaring ``reads_answers=True``, and those found to on more than PROBE_SHARE of
    the rows, unless they declare ``reads_answers=False`` (a topic or mention reward)."""
    out = {}
    for f in funcs:
        name, declared = f.__name__, declared_reads_answers(f)
        rows = sum(1 for i, g in enumerate(gold[name]) if g is not None and all(
            w[name][i] is not None and g > w[name][i] + 1e-9 for w in wrongs))
        if is_correctness(f) or declared or (declared is None and rows > PROBE_SHARE * n):
            out[name] = rows
    return out


def _hedges(funcs: Sequence, results: list[ProbeResult], readers: dict[str, int], gold: dict[str, list],
            wrong: dict[str, list]) -> list[HedgePaid]:
    out = []
    for f in funcs:
        paid = [r.probe.name for r in results if f.__name__ in r.paid_by]
        if paid:
            out.append(HedgePaid(f.__name__, is_correctness(f), paid, readers[f.__name__], _mean(gold[f.__name__]),
                                 _mean(wrong[f.__name__])))
    return out


def _rows(indices: list[int], rows: list[dict], ids: Sequence[int]) -> str:
    indices = sorted(indices, key=lambda i: ids[i])
    shown = ", ".join(f"gold {gold_of(rows[i])!r:.20}" for i in indices[:3])
    return f"rows {[ids[i] for i in indices[:8]]}{' ...' if len(indices) > 8 else ''}: {shown}"


def run_probes(funcs: Sequence, weights: Sequence[float], rows: list[dict], template, probes: Sequence[Probe],
               ids: Sequence[int] | None = None, guards: Sequence | None = None) -> tuple[dict[str, float], float, list[ProbeResult],
                                                           dict[str, float], list[HedgePaid]]:
    """(gold means per reward, gold total, one result per probe, the rewards that gave
    every completion tried one value: {name: value}, the rewards reading answers that pay
    probes as much as the gold). ``ids``: the rows' indices in the dataset, as failures
    name them. Two wrong answers written as the gold is (:func:`wrong_answer`,
    :func:`shifted`) tell the rewards that read answers from those that do not."""
    ids = list(range(len(rows))) if ids is None else ids
    built = [ProbeRow(r, gold_of(r), wrong_answer(gold_of(r)), template) for r in rows]
    groups = [[b.fill(b.gold) for b in built], [b.fill(b.wrong) for b in built],
              [b.fill(shifted(b.gold)) for b in built]] + [[p.build(b) for b in built] for p in probes]
    scored, n = _score_all(_guards(funcs, guards), weights, groups, rows)
    names = [f.__name__ for f in funcs]
    floors = {f.__name__: (f.range[0] if getattr(f, "range", None) else 0.0) for f in funcs}

    def cut(k: int) -> tuple[dict[str, list], list[float]]:
        return {name: per[k * n:(k + 1) * n] for name, per in zip(names, scored.per_reward)}, \
            scored.totals[k * n:(k + 1) * n]

    (gold, gold_totals), (wrong, _), (same_shape, _) = cut(0), cut(1), cut(2)
    readers = _readers(funcs, n, gold, [wrong, same_shape])
    results = []
    for k, probe in enumerate(probes, start=3):
        per, totals = cut(k)
        failures, paid_by = _judge(probe, rows, ids, per, totals, gold, gold_totals, list(readers), floors)
        results.append(ProbeResult(probe, {m: _mean(v) for m, v in per.items()}, _mean(totals), failures, paid_by))
    flat = {f.__name__: vals[0] for f, w, per in zip(funcs, weights, scored.per_reward)
            if w != 0 and _skipped(f, rows) is None  # weight 0 logs a reward, it is not meant to teach
            for vals in [[v for v in per if v is not None]] if vals and max(vals) - min(vals) <= 1e-9}
    hedges = _hedges(funcs, results, readers, gold, wrong)
    return {m: _mean(v) for m, v in gold.items()}, _mean(gold_totals), results, flat, hedges


def _score_all(guards: Sequence, weights: Sequence[float], groups: list[list[str]], rows: list[dict]):
    """Every group scored; the total of a completion a reward failed on is NaN (not
    judged: the other rewards' sum alone would understate it). Scored row by row, one
    row's completions (gold, wrong answers, probes) after another, as TRL lays out a
    prompt's completions: a group reward sees them as one group."""
    n, k = len(rows), len(groups)
    texts = [groups[j][i] for i in range(n) for j in range(k)]
    per, _, failed = _score(guards, texts, [rows[i] for i in range(n) for _ in range(k)], group_size=k)
    back = [i * k + j for j in range(k) for i in range(n)]  # kind by kind again
    per, failed = [[col[b] for b in back] for col in per], [[col[b] for b in back] for col in failed]
    totals = [math.nan if any(lost) else t for t, lost in zip(weighted_totals(per, weights), zip(*failed))]
    return _Scored(per, totals), len(rows)


@dataclass
class _Scored:
    per_reward: list[list]
    totals: list[float]


def check_stage(stage_name: str, funcs: Sequence, weights: Sequence[float], dataset, template, *,
                limit: int = GOLD_LIMIT, probe_rows: int = PROBE_ROWS, seed: int = 0,
                policy: PolicySettings | None = None, log: Callable[[str], None] = print) -> CheckReport:
    """One stage's check; ``policy``: the failure policy training applies (``health``),
    under which every reward is called here too."""
    n = min(limit, len(dataset))
    rows = [dataset[i] for i in range(n)]
    picked = random.Random(seed).sample(range(len(dataset)), min(probe_rows, len(dataset)))
    sample = [dataset[i] for i in picked]
    guards = (policy or PolicySettings()).guard_check(list(funcs), log)
    gold = gold_self_test(funcs, rows, template, guards)
    gold_means, gold_total, probes, flat, hedges = run_probes(funcs, weights, sample, template, all_probes(), picked,
                                                              guards)
    errors = [RewardErrors(g.__name__, g.failed, g.items, g.max_share) for g in guards if g.failed]
    return CheckReport(stage_name, n, gold, len(sample), gold_means, gold_total, probes, flat, hedges, errors,
                       answer_layout=template is not None)


def check_plans(cfg, train_ds, plans=None, *, limit: int | None = None, probe_rows: int | None = None,
                log: Callable[[str], None] = print, brief: bool = False) -> list[CheckReport]:
    """The check of every stage of a run (its rewards, on the training rows); ``plans``
    from ``prepare.plan``, else composed here without building a GRPOConfig (no TRL
    import). ``brief``: one line per stage that passes, the whole table for one that fails."""

    d = cfg.dataset
    template = d.answer_template or resolve_system_prompt(d.system_prompt)[1]
    if template is None and "question" not in train_ds.column_names:
        template = TRL_TEMPLATE
    stages = ([(p.section.name, p.funcs, p.weights, p.args.seed) for p in plans] if plans is not None
              else _stages(cfg, train_ds.column_names))
    reports = []
    policy = PolicySettings.of(cfg.health)
    env = getattr(cfg, "environment", None)
    scorers = ", ".join(f"'{e.name}'" for e in env.rewarded) if env is not None else ""
    if scorers:
        log(f"grpo check: the environment reward {scorers} (get_reward) is not checked: it scores the "
            f"environment's state after a rollout, which needs a model to play.")
    for name, funcs, weights, seed in stages:
        if not funcs:
            log(f"grpo check{f' [{name}]' if name != 'main' else ''}: skipped (no rewards to test; "
                f"the environment scores rollouts itself).")
            continue
        report = check_stage(name, funcs, weights, train_ds, template, limit=limit or GOLD_LIMIT,
                             probe_rows=probe_rows or PROBE_ROWS, seed=seed, policy=policy, log=log)
        log(summary_line(report) if brief and report.ok else format_report(report))
        reports.append(report)
    return reports


def _stages(cfg, columns: list[str]) -> list[tuple]:
    """(name, funcs, weights, seed) per stage, checked against the dataset's columns."""

    out = []
    for stage in cfg.stages:
        funcs, weights = stage.funcs, stage.weights
        check_columns(columns, funcs, f"dataset '{cfg.dataset.name}'")
        seed = cfg.value(stage, "seed", 42)  # TRL's default
        out.append((stage.name, funcs, weights, int(seed)))
    return out


__all__ = ["check_plans", "Probe", "ProbeRow", "CheckReport", "HedgePaid", "check_stage", "format_report", "is_correctness", "declared_reads_answers", "gold_self_test", "run_probes", "wrong_answer", "shifted"]
