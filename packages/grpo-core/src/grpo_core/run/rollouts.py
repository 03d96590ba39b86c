"""Multi-turn rollouts outside training, run exactly as training runs them.

With an environment or tools, a completion is several turns: the model's tool
calls, the tools' results, its next turn. ``grpo preflight`` and ``grpo eval`` run
them through the trainer training uses (:class:`~grpo_core.trainer.trainer.GrpoTrainer`,
TRL's own rollout: the environments' ``reset``, tool execution, the turn limit,
the chat template with the tools) and read back what TRL scored: the configured
rewards and each environment's ``get_reward``. Nothing is trained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from grpo_core.rewards.environments import count_tool_calls, transcript
from grpo_core.run.builder import build_trainer
from grpo_core.trainer.generation import Completion

# sequences per rollout call: TRL samples a whole batch at once
BATCH_SEQUENCES = 64


@dataclass
class Rollouts:
    """What TRL recorded for each completion, in row order (``n`` per row)."""

    n: int
    names: list[str]  # reward columns: the configured rewards, then environments'
    weights: list[float]
    per_reward: list[list[float | None]] = field(default_factory=list)
    completions: list = field(default_factory=list)  # message lists
    num_tokens: list[int] = field(default_factory=list)  # the model's own tokens (tool results left out)
    truncated: list[bool] = field(default_factory=list)
    extras: dict[str, list] = field(default_factory=dict)
    metrics: dict[str, list[float]] = field(default_factory=dict)

    @property
    def totals(self) -> list[float]:
        """The weighted sum per completion, None-scores left out (as TRL's nansum)."""
        return [sum(w * v for w, v in zip(self.weights, col) if v is not None)
                for col in zip(*self.per_reward)] if self.per_reward else []

    @property
    def texts(self) -> list[str]:
        return [transcript(c) for c in self.completions]

    @property
    def tool_calls(self) -> list[int]:
        return [count_tool_calls(c) for c in self.completions]


def make_trainer(prepared, stage, model, tokenizer, rows, log=print):
    """The training builder's trainer, rolling out only (see ``builder.build_trainer``):
    ``prepared`` (a :class:`~grpo_core.run.prepare.Prepared`) gives the config and device."""
    from datasets import Dataset

    return build_trainer(prepared, stage, model, tokenizer, log=log, rollouts_only=True,
                         dataset=Dataset.from_list(rows))


def rollout(trainer, rows: list[dict], n: int, *, greedy: bool = False) -> Rollouts:
    """``n`` multi-turn completions per row, scored; ``greedy``: no sampling."""
    import torch

    out = Rollouts(n, list(trainer.reward_func_names), trainer.reward_weights.tolist())
    out.per_reward = [[] for _ in out.names]
    trainer.model.eval()  # TRL's "eval" mode: n generations per prompt, metrics under "eval"
    trainer.num_generations_eval = n
    config = trainer.generation_config
    sampled = config.do_sample
    config.do_sample = not greedy
    per_call = max(1, BATCH_SEQUENCES // n)
    try:
        for start in range(0, len(rows), per_call):
            inputs = [dict(r) for r in rows[start:start + per_call] for _ in range(n)]
            trainer.clear_batch_logs()  # TRL keeps the last generation batch only
            with torch.no_grad():
                batch = trainer.rollout_batch(inputs)
            _collect(out, trainer, batch)
    finally:
        config.do_sample = sampled
    out.metrics = {k: list(v) for k, v in trainer.metrics("eval").items()}
    return out


def _collect(out: Rollouts, trainer, batch: dict) -> None:
    logs = trainer.last_batch_logs()
    out.completions += list(logs["completion"])
    for column, name in zip(out.per_reward, out.names):
        column += [None if v is None or math.isnan(v) else float(v) for v in logs["rewards"][name]]
    for key, values in logs["extra"].items():
        out.extras.setdefault(key, []).extend(values)
    mask = batch["completion_mask"]
    if "tool_mask" in batch:
        mask = mask * batch["tool_mask"]
    eos = {*trainer.eos_token_ids, trainer.text_tokenizer.pad_token_id}
    for ids, kept in zip(batch["completion_ids"].tolist(), batch["completion_mask"].tolist()):
        real = [t for t, m in zip(ids, kept) if m]
        out.truncated.append(not real or real[-1] not in eos)
    out.num_tokens += [int(x) for x in mask.sum(dim=1).tolist()]


def as_groups(r: Rollouts) -> list[list]:
    """The rollouts as ``generation.Completion`` groups (one per row), text as a transcript."""

    flat = [Completion(t, k, c) for t, k, c in zip(r.texts, r.num_tokens, r.truncated)]
    return [flat[i:i + r.n] for i in range(0, len(flat), r.n)]


def scored(r: Rollouts) -> dict:
    """The shape ``preflight.score_groups`` returns, from what TRL scored."""
    return {"per_reward": r.per_reward, "totals": r.totals, "extras": r.extras, "metrics": r.metrics,
            "completions": r.texts, "n": r.n}


def sample(prepared, stage, rows: list[dict], model, tokenizer, n: int, *, greedy: bool = False) -> Rollouts:
    """Load nothing: roll ``model`` out on ``rows`` as training would."""
    trainer = make_trainer(prepared, stage, model, tokenizer, rows)
    return rollout(trainer, rows, n, greedy=greedy)


def mean_tool_calls(r: Rollouts) -> float:
    calls = r.tool_calls
    return sum(calls) / len(calls) if calls else math.nan


__all__ = ["Rollouts", "make_trainer", "rollout", "sample", "as_groups", "scored", "mean_tool_calls"]
