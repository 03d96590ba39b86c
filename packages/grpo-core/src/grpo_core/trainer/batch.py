"""One training batch as a chain:

    sample -> score -> (dynamic merge) -> advantages -> loss inputs -> log

:meth:`Chain.batch` runs the first four for each generation batch (what TRL's
``_generate_and_score_completions`` does, with grpo's steps between): TRL samples and
scores (``GrpoTrainer.score_round``; dynamic sampling's rounds and merge,
:mod:`.dynamic`), the learning method (:mod:`.methods`, ``learning.method``) turns the
scores into advantages, and the batch goes back to TRL with them as its loss inputs;
then the log: what each generated token bought (:class:`Tokens`) and the rollout log
(:mod:`.rollout_log`), with the advantages the loss uses. At loss time
:meth:`Chain.token_advantages` gives a method that shapes tokens (``zvp``) the
entropies TRL computes there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_core.plugin import registry
from grpo_core.trainer.methods.base import Scored

TOKENS = "grpo_tokens.json"
EXTRA = "method/"  # the batch keys of a method's per-row extras


@dataclass(frozen=True)
class LearningSettings:
    """``learning``: the method by name with its parameters, and the correctness reward it
    judges groups on (``metric``: its logged name, with its right and wrong scores)."""

    method: str = "grpo"
    params: Mapping = field(default_factory=dict)
    metric: str | None = None
    right: float = 1.0
    wrong: float = 0.0

    def build(self):
        return registry.advantages().get(self.method).obj(**dict(self.params))


class Tokens:
    """What each generated completion token bought: generated (every round's, dropped
    groups' too) and teaching (in a row the loss gives a non-zero advantage), per batch
    and over the run; saved with every checkpoint so a resumed run keeps counting."""

    def __init__(self):
        self.generated = 0  # since the run started
        self.teaching = 0
        self.batch_generated = 0  # the batch being sampled

    def figures(self, teaching: int) -> dict[str, float]:
        """The batch's figures, once its teaching tokens are known (the batch then closes)."""
        generated, self.batch_generated = self.batch_generated, 0
        self.generated += generated
        self.teaching += teaching
        return {"generated": float(generated), "teaching_share": teaching / generated if generated else 0.0,
                "generated_total": float(self.generated),
                "teaching_share_total": self.teaching / self.generated if self.generated else 0.0}

    def save(self, folder: Path) -> None:
        (Path(folder) / TOKENS).write_text(json.dumps({"generated": self.generated, "teaching": self.teaching}) + "\n")

    def load(self, folder: Path) -> bool:
        path = Path(folder) / TOKENS
        if not path.is_file():
            return False
        state = json.loads(path.read_text())
        self.generated, self.teaching = int(state["generated"]), int(state["teaching"])
        return True


class Chain:
    """The chain of one trainer (:class:`~grpo_core.trainer.trainer.GrpoTrainer`), using
    only its public methods (``score_round``, ``batch_rewards``, ``record_metric``, ...)."""

    def __init__(self, trainer, settings: LearningSettings):
        self.trainer = trainer
        self.settings = settings
        self.method = settings.build()
        self.shapes_tokens = callable(getattr(self.method, "tokens", None))
        self.tokens = Tokens()

    def batch(self, inputs: list[dict]) -> dict:
        """One generation batch, sampled, scored, merged, with the method's advantages."""
        t = self.trainer
        log = t.rollout_log
        if log is not None:
            log.hold()  # the records wait for the advantages the loss uses
        if t.prompts is not None:
            inputs = t.prompts.choose(t, inputs)  # sampling.prompts: the sampler's prompts, not TRL's draw
        out = t.dynamic.generate(t, inputs) if t.dynamic is not None else t.score_round(inputs)
        advantages = self.advantages(out)
        self.log(out, advantages)
        return out

    def advantages(self, out: dict):
        """The method's advantages for every process's rows; this process's go into ``out``."""
        import torch

        t, acc = self.trainer, self.trainer.accelerator
        rows = acc.gather(out["advantages"])
        names = list(t.reward_func_names)
        rewards = t.batch_rewards()
        s = self.settings
        scored = Scored({n: torch.tensor([float("nan") if v is None else float(v) for v in rewards[n]],
                                         dtype=torch.float32, device=rows.device) for n in names},
                        t.reward_weights.tolist(), rows, t.num_generations, s.metric, s.right, s.wrong)
        result = self.method.rows(scored)
        local = len(out["advantages"])
        mine = slice(acc.process_index * local, (acc.process_index + 1) * local)
        out["advantages"] = result.rows[mine].to(out["advantages"].dtype)
        for key, value in result.extra.items():
            out[EXTRA + key] = value[mine]
        out[EXTRA + "teaching"] = result.teaching()[mine]
        return result

    def log(self, out: dict, advantages) -> None:
        """The batch's token figures, and the rollout log's records with the advantages used."""
        t = self.trainer
        mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        teaching = t.accelerator.gather((mask * out.pop(EXTRA + "teaching").unsqueeze(1)).sum()).sum()
        for name, value in self.tokens.figures(int(teaching)).items():
            t.record_metric(f"tokens/{name}", value)
        if t.rollout_log is not None:
            picks = t.dynamic.picks if t.dynamic is not None else None
            t.rollout_log.release(picks, advantages.rows.tolist())

    def count(self, out: dict) -> None:
        """A round just scored: its completion tokens were generated (dropped or not)."""
        mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        self.tokens.batch_generated += int(self.trainer.accelerator.gather(mask.sum()).sum())

    def token_advantages(self, inputs: dict, entropies, mask) -> Any:
        """At loss time: the method's per-token advantages for this micro-batch (B, T)."""
        extra = {k[len(EXTRA):]: v for k, v in inputs.items() if k.startswith(EXTRA)}
        return self.method.tokens(inputs["advantages"], extra, entropies, mask)


__all__ = ["Chain", "LearningSettings", "Tokens", "TOKENS"]
