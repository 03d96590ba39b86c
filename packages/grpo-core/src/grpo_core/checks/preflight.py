"""Does this setup give GRPO a learning signal? Sample a group of completions per
prompt from the base model, score them with the configured rewards, and judge.

GRPO's advantage is ``(r - mean(group)) / std(group)``: a group whose total
rewards are all equal contributes nothing. When most groups are flat, training
burns compute and learns nothing; this module says so before that happens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_core.base.tables import table
from grpo_core.rewards.scoring import RewardStats, score_batch

DEAD_SHARE = 0.9   # at least this share of flat groups: no learning signal (exit 1)
WEAK_SHARE = 0.5   # at least this share: a weak signal (warning)
# Rewards that extract a final answer report, through TRL's log_metric, the share of
# completions where they found none ("<reward>/no_answer"), and may log_extra the
# extracted answers ("<reward>/answer"), shown next to the samples.
NO_ANSWER_SUFFIX = "/no_answer"


@dataclass
class Report:
    prompts: int
    group_size: int
    rewards: list[dict]
    flat_share: float
    flat_share_by_reward: dict[str, float]
    truncation_rate: float
    mean_tokens: float
    extraction_failures: dict[str, float]
    samples: list[dict]
    verdict: str = "ok"
    advice: list[str] = field(default_factory=list)
    tool_calls: float | None = None  # mean tool calls per completion (multi-turn rollouts)

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == "dead" else 0

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {"exit_code": self.exit_code}


def _flat(values: Sequence[float | None]) -> bool:
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return len(vals) < 2 or max(vals) - min(vals) <= 1e-9


def score_groups(funcs, weights, prompts: list, rows: list[dict], groups: list[list[Any]]) -> dict:
    """Score each group of completions as TRL does (one call per reward over the batch)."""
    n = len(groups[0]) if groups else 0
    completions = [c.text for g in groups for c in g]
    ids = [c.token_ids for g in groups for c in g] if groups and groups[0][0].token_ids is not None else None
    scored = score_batch(funcs, weights, completions, [r for r in rows for _ in range(n)],
                         [p for p in prompts for _ in range(n)], ids)
    return {"per_reward": scored.per_reward, "totals": scored.totals, "extras": scored.extras,
            "metrics": scored.metrics, "completions": completions, "n": n}


def analyze(funcs, weights, prompts: list, rows: list[dict], groups: list[list[Any]],
            max_tokens: int, temperature: float | None = None, n_samples: int = 3) -> Report:
    scored = score_groups(funcs, weights, prompts, rows, groups)
    return judge_scored([f.__name__ for f in funcs], weights, prompts, scored, groups, temperature, n_samples)


def judge_scored(names: list[str], weights, prompts: list, scored: dict, groups: list[list[Any]],
                 temperature: float | None = None, n_samples: int = 3) -> Report:
    """The report on completions already scored (``score_groups``' shape): rewards
    scored here, or multi-turn rollouts TRL scored (:mod:`grpo_core.run.rollouts`)."""
    n, totals, per_reward = scored["n"], scored["totals"], scored["per_reward"]
    n_groups = len(groups)
    chunks = lambda xs: [xs[i * n:(i + 1) * n] for i in range(n_groups)]  # noqa: E731
    flat_share = sum(_flat(g) for g in chunks(totals)) / n_groups if n_groups else math.nan
    flat_by = {name: sum(_flat(g) for g in chunks(vals)) / n_groups for name, vals in zip(names, per_reward)}
    stats = []
    for name, w, vals in zip(names, weights, per_reward):
        s = RewardStats(name)
        s.add(vals)
        stats.append(dict(s.as_dict(), weight=w))
    flat_completions = [c for g in groups for c in g]
    truncation = sum(c.truncated for c in flat_completions) / max(len(flat_completions), 1)
    mean_tokens = sum(c.num_tokens for c in flat_completions) / max(len(flat_completions), 1)
    extraction = {name[: -len(NO_ANSWER_SUFFIX)]: sum(v) / len(v)
                  for name, v in scored["metrics"].items() if name.endswith(NO_ANSWER_SUFFIX) and v}
    answers = {k: v for k, v in scored["extras"].items() if k.endswith("/answer") and len(v) == len(totals)}
    samples = []
    for gi in range(min(n_samples, n_groups)):
        for ci in range(min(2, n)):
            k = gi * n + ci
            samples.append({"prompt": prompts[gi][-1]["content"] if isinstance(prompts[gi], list) else prompts[gi],
                            "completion": scored["completions"][k],
                            "scores": {name: vals[k] for name, vals in zip(names, per_reward)},
                            "extracted": {col: vals[k] for col, vals in answers.items()},
                            "total": totals[k]})
    report = Report(n_groups, n, stats, flat_share, flat_by, truncation, mean_tokens, extraction, samples)
    _judge(report, temperature)
    return report


def _judge(r: Report, temperature: float | None) -> None:
    pct = f"{100 * r.flat_share:.0f}%"
    if r.flat_share >= DEAD_SHARE:
        r.verdict = "dead"
        r.advice.append(
            f"{pct} of groups have identical rewards: GRPO gets no learning signal from them. "
            f"Add partial-credit rewards (e.g. format.xml_incremental, format.think_answer), "
            f"raise temperature{f' (now {temperature:g})' if temperature is not None else ''} or "
            f"num_generations, or add a few-shot example."
        )
    elif r.flat_share >= WEAK_SHARE:
        r.verdict = "weak"
        r.advice.append(f"{pct} of groups have identical rewards: the signal is weak; training will be slow.")
    for s in r.rewards:
        if s["n"] and s["none_share"] == 1.0:
            r.advice.append(f"{s['reward']} returned None for every completion: check its dataset columns "
                            f"(an unparseable gold answer gives None).")
        elif s["std"] == 0.0 and r.flat_share_by_reward.get(s["reward"], 0) == 1.0:
            what = "0" if s["mean"] == 0 else f"{s['mean']:.3g}"
            r.advice.append(f"{s['reward']} gave {what} to every completion: on its own it teaches nothing "
                            f"for this model (too strict, or already saturated).")
    for column, share in r.extraction_failures.items():
        if share >= 0.5:
            r.advice.append(f"{column}: no final answer could be extracted from {100 * share:.0f}% of completions; "
                            f"use a system prompt that asks for the format the reward reads (e.g. plain, xml).")
    if r.truncation_rate >= 0.5:
        r.advice.append(f"{100 * r.truncation_rate:.0f}% of completions hit max_completion_length "
                        f"(mean {r.mean_tokens:.0f} tokens): raise it, or reward shorter answers.")
    if r.verdict == "ok" and not r.advice:
        r.advice.append("rewards vary within groups: GRPO has a learning signal.")


def format_report(r: Report) -> str:
    tools = "" if r.tool_calls is None else f", {r.tool_calls:.2g} tool calls per completion"
    lines = [f"preflight: {r.prompts} prompts x {r.group_size} completions, "
             f"mean {r.mean_tokens:.0f} tokens, {100 * r.truncation_rate:.0f}% truncated{tools}", ""]
    rows = [[s["reward"], f"{s['weight']:g}", _f(s["mean"]), _f(s["std"]), f"{100 * s['none_share']:.0f}%",
             f"{100 * r.flat_share_by_reward[s['reward']]:.0f}%"] for s in r.rewards]
    lines.append(table(rows, ["reward", "weight", "mean", "std", "None", "flat groups"]))
    lines.append("")
    lines.append(f"groups with zero reward spread (total): {100 * r.flat_share:.0f}%")
    for column, share in r.extraction_failures.items():
        lines.append(f"answer-extraction failures ({column}): {100 * share:.0f}%")
    lines.append("")
    for s in r.samples:
        text = s["completion"].replace("\n", " ")
        got = "".join(f"  {col}={val!r}" for col, val in s["extracted"].items())
        limit = 160 if r.tool_calls is None else 400  # a transcript: tool calls, results, the answer
        lines.append(f"- {s['prompt'][:60]!r} -> {text[:limit]!r}  total={_f(s['total'])}{got}")
    lines.append("")
    lines.append(f"verdict: {r.verdict.upper()}")
    lines.extend(f"  * {a}" for a in r.advice)
    return "\n".join(lines)


def _f(v) -> str:
    return "nan" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}"
