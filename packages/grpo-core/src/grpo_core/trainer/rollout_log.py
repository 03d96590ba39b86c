"""The trainer's rollout log: each scored batch's completions gathered to the main process and
written there (``log.rollouts``), held under dynamic sampling until each group is marked
trained or dropped. What a file holds, and how it is read and written, is the run folder's
format: :mod:`grpo_core.runfiles.rollouts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    """The trainer's writer: a scored batch's records gathered to the main process and
    written there, at once, or held (dynamic sampling) until :meth:`release` marks each
    group trained or dropped."""

    def __init__(self, settings: RolloutLogSettings, group_size: int = 1):
        self.settings = settings
        self.group_size = group_size
        self._held: list[list[dict]] | None = None

    def hold(self) -> None:
        self._held = []

    def release(self, trained: Sequence[tuple[int, int]] | None = None,
                advantages: Sequence[float] | None = None) -> None:
        """The held records written. ``trained``: dynamic sampling's (round, group) trained, in
        the batch's order (each record marked ``trained`` or not); ``advantages``: the learning
        method's, one per row trained (the batch's order), replacing TRL's in the log."""
        held, self._held = self._held or [], None
        order = {key: k for k, key in enumerate(trained)} if trained is not None else None
        for records in held:
            for i, rec in enumerate(records):
                key = (rec["round"], rec["group"])
                if order is not None:
                    rec["trained"] = key in order
                row = i if order is None else (order[key] * self.group_size + i % self.group_size
                                               if key in order else None)
                if advantages is not None and row is not None:
                    rec["advantage"] = finite_or_none(advantages[row])
            self.write(records)

    def collect(self, trainer, inputs: list[dict], out: dict, round_: int = 0) -> None:
        """The batch just scored (``out``, TRL's batch; the trainer's logs hold it alone)."""
        records = self.records(trainer, inputs, out, round_)
        if records is None:
            return
        if self._held is not None:
            self._held.append(records)
        else:
            self.write(records)

    def write(self, records: list[dict]) -> None:
        write(Path(self.settings.folder), records[0]["step"], records, records[0]["round"])

    def records(self, trainer, inputs: list[dict], out: dict, round_: int) -> list[dict] | None:
        """The batch's records on the main process (None elsewhere, or when the step is not
        one the log keeps); every process takes part in the gathers."""
        import torch
        from accelerate.utils import gather_object

        cfg, acc = self.settings, trainer.accelerator
        step = cfg.step(trainer.state.global_step)
        if not cfg.logged(step):
            return None
        mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        eos = {*trainer.eos_token_ids, trainer.text_tokenizer.pad_token_id}
        ends = [[t for t, m in zip(ids, kept) if m] for ids, kept in
                zip(out["completion_ids"].tolist(), out["completion_mask"].tolist())]
        truncated = torch.tensor([not real or real[-1] not in eos for real in ends], device=mask.device)
        tokens = acc.gather(mask.sum(dim=1)).tolist()
        truncated = acc.gather(truncated).tolist()
        inputs = gather_object(inputs)
        if not acc.is_main_process or not inputs:
            return None
        logs = trainer.last_batch_logs()
        return rows(step, cfg.stage, round_, trainer.num_generations, inputs, list(logs["completion"]),
                    {name: list(logs["rewards"][name]) for name in trainer.reward_func_names},
                    trainer.reward_weights.tolist(), list(logs["advantages"]),
                    {k: list(v) for k, v in logs["extra"].items()}, tokens, truncated, cfg.index)


def prompt_index(dataset) -> dict[str, int]:
    """Prompt text -> the first row of the training set with it."""
    out: dict[str, int] = {}
    for i, prompt in enumerate(dataset["prompt"] if "prompt" in dataset.column_names else ()):
        out.setdefault(prompt_text(prompt), i)
    return out


__all__ = ["FOLDER", "OURS", "RolloutLog", "RolloutLogSettings", "logged", "rows", "write", "read", "files", "truncate",
           "prompt_index", "prompt_text", "finite_or_none"]
