"""The trainer's prompt sampler (``sampling.prompts``): which training prompts each
generation batch draws, chosen before anything is generated.

The default, ``trl``, is TRL's own sampler and this module then does nothing (the trainer
has no :class:`Prompts`). Another sampler (:mod:`grpo_core.trainer.samplers`):

- :meth:`Prompts.choose` (the chain's sample step) swaps TRL's drawn prompts for the
  sampler's, in TRL's layout (each prompt repeated for its group, every process taking its
  slice of the same global list), and dynamic sampling's fresh prompts for its refill
  rounds (:meth:`Prompts.draw`);
- :meth:`Prompts.observe`, after each round of a batch is scored in training, hands the
  sampler each group's prompt and its completions' pass scores on the correctness reward,
  and logs the sampler's figures as ``prompts/<key>``;
- its state is saved with every checkpoint (``grpo_prompts.json``) and loaded on ``--resume``.

A prompt is known by the first training row with the same prompt (the rollout log's
``prompt_index``), so every process and every round agrees on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grpo_core.base.errors import ConfigError
from grpo_core.data.difficulty import Difficulty
from grpo_core.plugin import registry
from grpo_core.trainer.batch import Batch, Processes, Round
from grpo_core.trainer.rollout_log import prompt_index, prompt_text
from grpo_core.trainer.samplers.base import Pool, pass_scores

STATE = "grpo_prompts.json"
PREFIX = "prompts/"  # the sampler's metrics


@dataclass(frozen=True)
class PromptSettings:
    """``sampling.prompts``: the sampler by name with its parameters; the correctness reward
    whose scores are pass rates (``metric``: its logged name, with its right and wrong
    scores); the dataset's name and the difficulty its adapter declares."""

    name: str = "trl"
    params: Mapping = field(default_factory=dict)
    metric: str | None = None
    right: float = 1.0
    wrong: float = 0.0
    dataset: str = "the dataset"
    knob: Difficulty | None = None

    @property
    def spec(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})" if args else self.name

    def build(self):
        return registry.samplers().get(self.name).obj(**dict(self.params))


def make_pool(settings: PromptSettings, dataset, *, seed: int, group_size: int,
              say: Callable[[str], None]) -> Pool:
    """The training rows as a sampler sees them (:class:`~grpo_core.trainer.samplers.base.Pool`)."""
    index = prompt_index(dataset)
    keys = [index.get(prompt_text(p), i) for i, p in enumerate(dataset["prompt"])]
    knob = settings.knob
    difficulty = None
    if knob is not None and knob.column in dataset.column_names:
        values = dataset[knob.column]
        bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))), None)
        if bad is not None or not values:
            raise ConfigError(f"dataset '{settings.dataset}' declares its difficulty in column '{knob.column}', but "
                              f"the column holds {bad!r:.40} (a number per row is needed): fix the adapter, or set "
                              f"sampling.prompts to {settings.name}(knob=False).")
        difficulty = [float(v) for v in values]
    return Pool(keys, difficulty, knob, settings.dataset, seed, group_size, say)


def start(settings: PromptSettings, pool: Pool):
    """The sampler built and started on ``pool``; its refusal is a ConfigError naming the setting."""
    sampler = settings.build()
    begin = getattr(sampler, "start", None)
    if begin is not None:
        try:
            begin(pool)
        except ValueError as exc:
            raise ConfigError(f"sampling.prompts {settings.spec!r}: {exc}") from None
    return sampler


class Prompts:
    """The chain's prompt sampler (see the module docstring): it sees the batch and its
    rounds, never the trainer."""

    def __init__(self, settings: PromptSettings, dataset, *, group_size: int, seed: int,
                 log: Callable[[str], None] = print):
        self.settings = settings
        self.dataset = dataset
        self.group_size = group_size
        self.pool = make_pool(settings, dataset, seed=seed, group_size=group_size, say=log)
        self.index = prompt_index(dataset)
        self.sampler = start(settings, self.pool)

    def choose(self, batch: Batch, processes: Processes) -> Batch:
        """The sample step: this process's rows for the batch, the sampler's prompts in place
        of TRL's ``batch.inputs`` (the same number, each prompt repeated for its group)."""
        g, local = self.group_size, len(batch.inputs)
        everyone = _gathered(processes, batch.inputs)
        proposed = [self.index.get(prompt_text(everyone[k].get("prompt")), -1) for k in range(0, len(everyone), g)]
        rows = self._pick(len(proposed), proposed)
        laid = [self.dataset[r] for r in rows for _ in range(g)]
        batch.inputs = laid[processes.process_index * local:(processes.process_index + 1) * local]
        return batch

    def draw(self, proposed: list[int]) -> list[int]:
        """Dynamic sampling's fresh rows for a refill round (``proposed``: its own draw)."""
        return self._pick(len(proposed), proposed)

    def _pick(self, n: int, proposed: list[int]) -> list[int]:
        rows = self.sampler.choose(self.pool, n, proposed)
        rows = list(rows) if rows is not None else None
        if rows is None or len(rows) != n or not all(
                isinstance(r, int) and not isinstance(r, bool) and 0 <= r < len(self.pool) for r in rows):
            raise RuntimeError(f"prompt sampler '{self.settings.name}' chose {rows!r:.120} for a batch of {n} prompts: "
                               f"it must return {n} row indices of the training set (0 to {len(self.pool) - 1}).")
        return rows

    def observe(self, batch: Batch, round_: Round, processes: Processes) -> None:
        """A round of the batch was just scored (TRL's gathered logs of it): each group's
        prompt and pass scores to the sampler, its figures to the batch's metrics."""
        observe = getattr(self.sampler, "observe", None)
        if observe is None or self.settings.metric is None:  # (no correctness reward: no pass rates)
            return
        s, g = self.settings, self.group_size
        everyone = _gathered(processes, round_.inputs)
        scores = pass_scores(list(round_.logs["rewards"][s.metric]), s.right, s.wrong)
        rows = [self.index.get(prompt_text(everyone[k].get("prompt")), -1) for k in range(0, len(everyone), g)]
        groups = [scores[k * g:(k + 1) * g] for k in range(len(rows))]
        known = [(r, p) for r, p in zip(rows, groups) if r >= 0]  # (a prompt not of the training set: none)
        observe([r for r, _ in known], [p for _, p in known])
        metrics = getattr(self.sampler, "metrics", None)
        for key, value in (metrics() if metrics is not None else {}).items():
            batch.record(PREFIX + key, float(value))

    def save(self, folder: Path) -> None:
        state = getattr(self.sampler, "state", None)
        if state is not None:
            (Path(folder) / STATE).write_text(json.dumps({"sampler": self.settings.spec, "state": state()}) + "\n")

    def load(self, folder: Path) -> bool:
        path, load = Path(folder) / STATE, getattr(self.sampler, "load", None)
        if load is None or not path.is_file():
            return False
        load(json.loads(path.read_text())["state"])
        return True


def _gathered(processes: Processes, inputs: list[dict]) -> list[dict]:
    """Every process's rows, in process order (this process's own on one)."""
    if processes.num_processes == 1:
        return inputs
    from accelerate.utils import gather_object

    return gather_object(inputs)


__all__ = ["Prompts", "PromptSettings", "make_pool", "start", "STATE", "PREFIX"]
