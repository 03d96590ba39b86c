"""The trainer's rollout log (``log.rollouts``), the chain's last step: each scored round's
completions gathered to the main process and written there, each group marked trained or
dropped under dynamic sampling, with the advantages the loss uses. What a file holds, and
how it is read and written, is the run folder's format: :mod:`grpo_core.runfiles.rollouts`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

# the format's names, imported here for the trainer's callers (run/builder.py, run/train.py, tests)
from grpo_core.runfiles.rollouts import (  # noqa: F401
    FOLDER,
    OURS,
    files,
    finite_or_none,
    logged,
    prompt_text,
    read,
    rows,
    truncate,
    write,
)
from grpo_core.trainer.batch import Batch, Processes, Round, completion_tokens


@dataclass(frozen=True)
class RolloutLogSettings:
    """Where the log goes and which steps it keeps (``log.rollouts``)."""

    folder: Path  # OUTPUT_DIR/rollouts: one log for the run, all stages
    every: int = 1  # every Nth step (1: all, 0: none)
    stage: str = "main"
    offset: int = 0  # global steps of the stages before this one
    index: Mapping[str, int] = field(default_factory=dict, compare=False)  # prompt text -> training set row

    def step(self, global_step: int) -> int:
        """The run's step (1-based) a batch generated at the stage's ``global_step`` trains."""
        return self.offset + global_step + 1

    def logged(self, step: int) -> bool:
        """Is the run's ``step`` one the log keeps?"""
        return logged(step, self.every)


class RolloutLog:
    """The chain's log step for the rollout log: each round's records gathered to the main
    process and written there, each group marked trained or dropped under dynamic sampling,
    with the advantages the loss uses. It sees the batch, never the trainer; ``ends``: the
    token ids a completion that ended by itself ends with (EOS and pad)."""

    def __init__(self, settings: RolloutLogSettings, group_size: int = 1, ends: Collection[int] = ()):
        self.settings = settings
        self.group_size = group_size
        self.ends = frozenset(ends)

    def log(self, batch: Batch, processes: Processes) -> None:
        """The batch's rounds written, in order. Under dynamic sampling (``batch.picks``: the
        (round, group) trained, in the batch's order) each record says ``trained`` or not;
        the learning method's advantages (``batch.advantages``, one per row trained, the
        batch's order) replace TRL's."""
        picks = batch.picks
        order = {key: k for k, key in enumerate(picks)} if picks is not None else None
        advantages = batch.advantages.rows.tolist() if batch.advantages is not None else None
        for round_ in batch.rounds:
            records = self.records(batch, round_, processes)
            if records is None:
                continue
            for i, rec in enumerate(records):
                key = (rec["round"], rec["group"])
                if order is not None:
                    rec["trained"] = key in order
                row = i if order is None else (order[key] * self.group_size + i % self.group_size
                                               if key in order else None)
                if advantages is not None and row is not None:
                    rec["advantage"] = finite_or_none(advantages[row])
            self.write(records)

    def write(self, records: list[dict]) -> None:
        write(Path(self.settings.folder), records[0]["step"], records, records[0]["round"])

    def records(self, batch: Batch, round_: Round, processes: Processes) -> list[dict] | None:
        """A round's records on the main process (None elsewhere, or when the step is not
        one the log keeps); every process takes part in the gathers."""
        import torch
        from accelerate.utils import gather_object

        cfg, out = self.settings, round_.tensors
        step = cfg.step(batch.step)
        if not cfg.logged(step):
            return None
        mask = completion_tokens(out)
        ends = [[t for t, m in zip(ids, kept) if m] for ids, kept in
                zip(out["completion_ids"].tolist(), out["completion_mask"].tolist())]
        truncated = torch.tensor([not real or real[-1] not in self.ends for real in ends], device=mask.device)
        tokens = processes.gather(mask.sum(dim=1)).tolist()
        truncated = processes.gather(truncated).tolist()
        inputs = gather_object(round_.inputs)
        if not processes.is_main_process or not inputs:
            return None
        logs = round_.logs
        return rows(step, cfg.stage, round_.index, self.group_size, inputs, list(logs["completion"]),
                    {name: list(logs["rewards"][name]) for name in batch.names}, batch.weights,
                    list(logs["advantages"]), {k: list(v) for k, v in logs["extra"].items()}, tokens, truncated,
                    cfg.index)


def prompt_index(dataset) -> dict[str, int]:
    """Prompt text -> the first row of the training set with it."""
    out: dict[str, int] = {}
    for i, prompt in enumerate(dataset["prompt"] if "prompt" in dataset.column_names else ()):
        out.setdefault(prompt_text(prompt), i)
    return out


__all__ = ["FOLDER", "OURS", "RolloutLog", "RolloutLogSettings", "logged", "rows", "write", "read", "files", "truncate",
           "prompt_index", "prompt_text", "finite_or_none"]
