"""One generation batch as a typed value: what each step of the chain takes and returns.

    sample -> score -> (dynamic merge) -> advantages -> loss inputs -> log

:class:`~grpo_core.trainer.chain.Chain` passes one :class:`Batch` down the steps; each
feature sees the batch (and :class:`Processes`, where it gathers) with its own settings,
never the trainer. The walk of one batch through the files is in docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from grpo_core.trainer.methods.base import Advantages

Tensors = dict[str, Any]  # TRL's batch: name -> Tensor, this process's rows


class Processes(Protocol):
    """The processes training together (accelerate's ``Accelerator`` is one): each holds
    its own rows of a batch; ``gather`` puts every process's tensors together in process
    order."""

    num_processes: int
    process_index: int
    is_main_process: bool

    def gather(self, tensor: Any) -> Any: ...


@dataclass
class Round:
    """One call of TRL's generate-and-score (dynamic sampling makes several a batch)."""

    index: int  # 0, then dynamic sampling's refill rounds
    inputs: list[dict]  # this process's rows given to TRL, each prompt once per completion
    tensors: Tensors  # what TRL made of them, this process's rows
    # TRL's logs of the round, every process's rows: "prompt", "completion", "advantages" (lists),
    # "rewards" and "extra" ({name: list})
    logs: Mapping[str, Any]


@dataclass
class Batch:
    """One generation batch as it goes down the chain. The trainer makes it (``step``,
    ``inputs``: TRL's rows, the rewards' ``names`` and ``weights`` as they stand for this
    batch; adaptive weights move them between batches, never within one); each step fills
    in its part."""

    step: int  # the trainer's global step as the batch is sampled
    inputs: list[dict]  # sample: the prompts asked for (TRL's draw, or the prompt sampler's)
    names: list[str]
    weights: list[float]
    group_size: int
    rounds: list[Round] = field(default_factory=list)  # score: each round TRL scored, in order
    # merge: the rows trained, in TRL's shape: the loss inputs (the advantages step writes its own)
    tensors: Tensors = field(default_factory=dict)
    # merge (dynamic sampling): which (round, group over every process) the rows trained are, in
    # their order; each reward's scores on them; TRL's step figures computed on them. None: the one
    # round as TRL made it
    picks: list[tuple[int, int]] | None = None
    rewards: dict[str, list[float]] | None = None
    figures: dict[str, float] | None = None
    advantages: Advantages | None = None  # the learning method's, every process's rows
    metrics: dict[str, list[float]] = field(default_factory=dict)  # what the log step records

    def record(self, name: str, value: float) -> None:
        self.metrics.setdefault(name, []).append(value)

    def scores(self) -> Mapping[str, Sequence[Any]]:
        """Each reward's scores on the rows trained, every process's (None or NaN where a
        reward gave none): dynamic sampling's picks, else the one round's."""
        return self.rewards if self.rewards is not None else self.rounds[-1].logs["rewards"]


# the chain's score step as the merge step calls it: (inputs, round) -> the round scored
Score = Callable[[list[dict], int], Round]


def completion_tokens(tensors: Tensors) -> Any:
    """The completion tokens a batch's loss counts, (B, T): the completion mask, less the
    tool results where TRL marks them (``tool_mask``)."""
    mask = tensors["completion_mask"]
    return mask * tensors["tool_mask"] if "tool_mask" in tensors else mask


__all__ = ["Batch", "Round", "Processes", "Score", "Tensors", "completion_tokens"]
