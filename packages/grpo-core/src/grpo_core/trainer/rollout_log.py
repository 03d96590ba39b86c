"""The rollout log: every completion a run scores, as it was scored.

One Parquet file per logged step, ``OUTPUT_DIR/rollouts/step-000012.parquet``
(and ``step-000012-1.parquet`` ... for the extra generation rounds of dynamic sampling),
written by the main process when the step's generation batch has been scored
(before the step trains on it), so a crash loses at most the current step and
memory holds one step at a time. ``--resume`` removes the files of steps after
the checkpoint, as it cuts ``metrics.jsonl``. ``log.rollouts``: ``all``,
``none``, or N (every Nth step: steps 1, N+1, 2N+1, ...).

A row is one completion:

========================  ===================================================
``step``, ``stage``       the optimizer step this batch trains (first, when a
                          batch serves several: ``steps_per_generation``)
``round``                 the generation round (dynamic sampling draws more)
``trained``               with dynamic sampling: whether the group was trained on,
                          or dropped (flat, or more than the batch needed)
``group``, ``prompt_index``  the group within the step; the prompt's row in
                          the training set (first row with that prompt)
``prompt``                the prompt's last user message
``completion``            the text (with tool calls and results, for
                          environments: ``[call: f(x=1)] [result: 2]``)
``tokens``, ``truncated``  the model's own tokens; cut at
                          ``max_completion_length`` without an end token
``tool_calls``            tool calls in it
``reward/<name>``         each reward's score, None kept as null
``total``                 the weighted sum TRL logs (None left out)
``advantage``             the advantage the loss uses (TRL's, or the learning
                          method's per completion; ``zvp`` shapes flat groups'
                          tokens further at loss time)
``extra/<key>``           what rewards logged through ``log_extra`` (the
                          extracted answer, a code run's cause)
dataset columns           the row's own columns (``answer``, ...), so that
                          ``grpo score --input`` can re-score the log
========================  ===================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_core.rewards.environments import count_tool_calls, transcript

FOLDER = "rollouts"
OURS = ("step", "stage", "round", "group", "prompt_index", "prompt", "completion", "tokens", "truncated",
        "tool_calls", "total", "advantage")
_FILE_RE = re.compile(r"^step-(\d+)(?:-(\d+))?\.parquet$")


def logged(step: int, every: int) -> bool:
    """Is ``step`` (1-based) one that ``log.rollouts`` keeps?"""
    return every > 0 and (step - 1) % every == 0


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


def prompt_text(prompt: Any) -> str:
    """The last user message of a conversational prompt, or the prompt itself."""
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        content = (users or prompt or [{}])[-1].get("content", "")
        return content if isinstance(content, str) else " ".join(
            p.get("text", "") for p in content if isinstance(p, dict))
    return str(prompt)


def prompt_index(dataset) -> dict[str, int]:
    """Prompt text -> the first row of the training set with it."""
    out: dict[str, int] = {}
    for i, prompt in enumerate(dataset["prompt"] if "prompt" in dataset.column_names else ()):
        out.setdefault(prompt_text(prompt), i)
    return out


def rows(step: int, stage: str, round_: int, group_size: int, inputs: Sequence[dict], completions: Sequence,
         rewards: dict[str, Sequence], weights: Sequence[float], advantages: Sequence[float],
         extras: dict[str, Sequence], tokens: Sequence[int], truncated: Sequence[bool],
         index: Mapping[str, int]) -> list[dict]:
    """One record per completion of a scored generation batch (gathered over processes)."""

    names = list(rewards)
    out = []
    for i, completion in enumerate(completions):
        row = inputs[i]
        text = prompt_text(row.get("prompt", ""))
        scores = {f"reward/{n}": finite_or_none(rewards[n][i]) for n in names}
        total = sum(w * v for w, v in zip(weights, scores.values()) if v is not None)
        record = {"step": step, "stage": stage, "round": round_, "group": i // max(group_size, 1),
                  "prompt_index": index.get(text, -1), "prompt": text,
                  "completion": transcript(completion, limit=4000), "tokens": int(tokens[i]),
                  "truncated": bool(truncated[i]), "tool_calls": count_tool_calls(completion),
                  **scores, "total": total, "advantage": finite_or_none(advantages[i])}
        record.update({f"extra/{k}": _cell(v[i]) if i < len(v) else None for k, v in extras.items()})
        for key, value in row.items():
            if key != "prompt" and _storable(value):
                record[key if key not in record else f"data/{key}"] = value
        out.append(record)
    return out


def finite_or_none(v) -> float | None:
    """A score as a plain float (numpy scalars and 0-d tensors too); None where there is
    none or it is not finite (the log, and eval.json, stay valid JSON)."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _cell(v):
    return v if v is None or isinstance(v, (str, int, float, bool)) else str(v)


def _storable(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def write(folder: Path, step: int, records: list[dict], round_: int = 0) -> Path:
    """The step's file (one more per extra generation round), written whole: a
    temporary name, then renamed, so a crash never leaves half a file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (f"step-{step:06d}.parquet" if not round_ else f"step-{step:06d}-{round_}.parquet")
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(pa.Table.from_pylist(records), tmp)
    tmp.replace(path)
    return path


def files(folder: Path) -> list[tuple[int, Path]]:
    if not folder.is_dir():
        return []
    out = [(int(m[1]), int(m[2] or 0), p) for p in folder.iterdir() if (m := _FILE_RE.match(p.name))]
    return [(step, p) for step, _, p in sorted(out)]


def truncate(folder: Path, max_step: int) -> None:
    """A resumed run writes the steps after its checkpoint again."""
    for step, path in files(folder):
        if step > max_step:
            path.unlink(missing_ok=True)


def read(path: Path, steps: Sequence[int] | None = None):
    """The log as one pyarrow Table: a run's output dir, its ``rollouts`` folder, or one
    file; ``steps``: only those. Files with different columns (a reward that logged an
    extra only some steps) are unified, absent cells null."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: give a run's output_dir (or its rollouts folder or "
                                f"one step-*.parquet file)")
    if path.is_file():
        chosen = [path]
    else:
        folder = path / FOLDER if (path / FOLDER).is_dir() else path
        chosen = [p for s, p in files(folder) if steps is None or s in steps]
    if not chosen:
        raise FileNotFoundError(f"no rollout log in {path} (rollouts/step-*.parquet); the run may have set "
                                f"log.rollouts: none")
    tables = [pq.read_table(p) for p in chosen]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


__all__ = ["FOLDER", "OURS", "RolloutLog", "RolloutLogSettings", "logged", "rows", "write", "read", "files", "truncate", "prompt_index", "prompt_text", "finite_or_none"]
