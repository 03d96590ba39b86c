"""One training batch as a chain of steps, each taking the :class:`~.batch.Batch` and
returning it:

    sample -> score -> (dynamic merge) -> advantages -> loss inputs -> log

:meth:`Chain.batch` runs them for each generation batch, in place of TRL's
``_generate_and_score_completions``: the prompt sampler picks the prompts
(:mod:`.prompts`, ``sampling.prompts``); TRL generates and scores them, a round at a time
(the trainer lends the chain TRL's step as a function, ``score``); dynamic sampling makes
its rounds and merges them (:mod:`.dynamic`); the learning method (:mod:`.methods`,
``learning.method``) turns the scores into advantages, which go back to TRL in the loss
inputs; the log step records the batch's figures (what each generated token bought,
:class:`Tokens`) and writes the rollout log (:mod:`.rollout_log`) with the advantages the
loss uses. At loss time :meth:`Chain.token_advantages` gives a method that shapes tokens
(``zvp``) the entropies TRL computes there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from grpo_core.plugin import registry
from grpo_core.trainer.batch import Batch, Processes, Round, Tensors, completion_tokens
from grpo_core.trainer.dynamic import DynamicSampling, relog
from grpo_core.trainer.methods.base import Scored
from grpo_core.trainer.prompts import Prompts
from grpo_core.trainer.rollout_log import RolloutLog

TOKENS = "grpo_tokens.json"
EXTRA = "method/"  # the batch keys of a method's per-row extras

# what the chain asks of TRL, lent by the trainer: one round generated and scored
# (inputs, round, with the reference model's log-probs?) and the reference model's log-probs of a batch
TrlScore = Callable[[list[dict], int, bool], Round]
Reference = Callable[[Tensors], Any]


@dataclass(frozen=True)
class LearningSettings:
    """``learning``: the method by name with its parameters, and the correctness reward it
    judges groups on (``metric``: its logged name, with its right and wrong scores)."""

    method: str = "grpo"
    params: Mapping = field(default_factory=dict)
    metric: str | None = None
    right: float = 1.0
    wrong: float = 0.0

    def build(self) -> Any:
        return registry.advantages().get(self.method).obj(**dict(self.params))


class Tokens:
    """What each generated completion token bought: generated (every round's, dropped
    groups' too) and teaching (in a row the loss gives a non-zero advantage), per batch
    and over the run; saved with every checkpoint so a resumed run keeps counting."""

    def __init__(self) -> None:
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
    """The steps of one batch (see the module docstring), with the features that are on
    (None: off) and the two TRL steps the trainer lends it; ``vllm``: TRL samples with vLLM
    (no sampler KL to measure)."""

    def __init__(self, settings: LearningSettings, *, score: TrlScore, reference: Reference,
                 processes: Processes, prompts: Prompts | None = None, dynamic: DynamicSampling | None = None,
                 rollout_log: RolloutLog | None = None, vllm: bool = False):
        self.settings = settings
        self.method = settings.build()
        self.shapes_tokens = callable(getattr(self.method, "tokens", None))
        self.tokens = Tokens()
        self.trl_score, self.reference, self.processes = score, reference, processes
        self.prompts, self.dynamic, self.rollout_log, self.vllm = prompts, dynamic, rollout_log, vllm

    def states(self) -> list[Any]:
        """What a checkpoint saves of the chain (exact resume): the token counts, dynamic
        sampling's prompt stream, the prompt sampler's state."""
        return [self.tokens, *([self.dynamic] if self.dynamic else []), *([self.prompts] if self.prompts else [])]

    def batch(self, batch: Batch, metrics: MutableMapping[str, list[float]]) -> Batch:
        """One generation batch down the chain; ``metrics``: TRL's, until its next log (the
        log step adds the batch's figures). The loss inputs are ``batch.tensors``."""
        before = {k: len(v) for k, v in metrics.items()}
        if self.prompts is not None:
            batch = self.prompts.choose(batch, self.processes)  # sample: the sampler's prompts, not TRL's draw
        if self.dynamic is None:
            batch.tensors = self.score(batch, batch.inputs, 0, reference=True).tensors
        else:  # rounds and their merge; the reference model runs once, on the rows trained
            batch = self.dynamic.generate(batch, partial(self.score, batch, reference=False), self.processes)
            reference = self.reference(batch.tensors)
            if reference is not None:
                batch.tensors["ref_per_token_logps"] = reference
        batch = self.advantages(batch)
        self.log(batch, metrics, before)
        return batch

    def score(self, batch: Batch, inputs: list[dict], index: int, reference: bool = True) -> Round:
        """One round: TRL generates and scores ``inputs``; the round's tokens are counted
        (generated, dropped or not), the sampler's KL measured, the prompt sampler told."""
        round_ = self.trl_score(inputs, index, reference)
        batch.rounds.append(round_)
        self.tokens.batch_generated += int(self.processes.gather(completion_tokens(round_.tensors).sum()).sum())
        kl = None if self.vllm else sampler_kl(round_.tensors, self.processes)
        if kl is not None:
            batch.record("sampling/kl", kl)
        if self.prompts is not None:
            self.prompts.observe(batch, round_, self.processes)
        return round_

    def advantages(self, batch: Batch) -> Batch:
        """The method's advantages for every process's rows (``batch.advantages``); this
        process's go into the loss inputs, with the method's per-row extras."""
        import torch

        out, acc = batch.tensors, self.processes
        rows = acc.gather(out["advantages"])
        rewards, s = batch.scores(), self.settings
        scored = Scored({n: torch.tensor([float("nan") if v is None else float(v) for v in rewards[n]],
                                         dtype=torch.float32, device=rows.device) for n in batch.names},
                        batch.weights, rows, batch.group_size, s.metric, s.right, s.wrong)
        result = batch.advantages = self.method.rows(scored)
        local = len(out["advantages"])
        mine = slice(acc.process_index * local, (acc.process_index + 1) * local)
        out["advantages"] = result.rows[mine].to(out["advantages"].dtype)
        for key, value in result.extra.items():
            out[EXTRA + key] = value[mine]
        out[EXTRA + "teaching"] = result.teaching()[mine]
        return batch

    def log(self, batch: Batch, metrics: MutableMapping[str, list[float]], before: Mapping[str, int]) -> None:
        """The batch's figures into TRL's ``metrics`` (TRL's own reward figures replaced by the
        trained batch's under dynamic sampling), and the rollout log's records."""
        out = batch.tensors
        mask = completion_tokens(out)
        teaching = self.processes.gather((mask * out.pop(EXTRA + "teaching").unsqueeze(1)).sum()).sum()
        for name, value in self.tokens.figures(int(teaching)).items():
            batch.record(f"tokens/{name}", value)
        if batch.figures is not None:
            relog(metrics, before, batch.figures)
        for name, values in batch.metrics.items():
            metrics.setdefault(name, []).extend(values)
        if self.rollout_log is not None:
            self.rollout_log.log(batch, self.processes)

    def token_advantages(self, inputs: dict, entropies: Any, mask: Any) -> Any:
        """At loss time: the method's per-token advantages for this micro-batch (B, T)."""
        extra = {k[len(EXTRA):]: v for k, v in inputs.items() if k.startswith(EXTRA)}
        return self.method.tokens(inputs["advantages"], extra, entropies, mask)


def sampler_kl(tensors: Tensors, processes: Processes) -> float | None:
    """``sampling/kl``: the mean over sampled tokens of log p_sampler - log p_trainer, an
    estimate of KL(sampler || trainer) per token from the sampler's own draws; None when
    the sampler returned no log-probabilities."""
    import torch

    sampled, trained = tensors.get("sampling_per_token_logps"), tensors.get("old_per_token_logps")
    if sampled is None or trained is None:
        return None
    mask = completion_tokens(tensors)
    diff = torch.nan_to_num((sampled - trained) * mask, nan=0.0)
    totals = processes.gather(torch.stack([diff.sum(), mask.sum().to(diff.dtype)]).view(1, 2)).sum(0)
    return float((totals[0] / totals[1].clamp(min=1)).item())


__all__ = ["Chain", "LearningSettings", "Tokens", "TOKENS", "EXTRA", "sampler_kl"]
