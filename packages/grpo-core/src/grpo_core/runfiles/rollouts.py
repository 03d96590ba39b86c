"""The rollout log's format: every completion a run scores, as it was scored.

One Parquet file per logged step, ``OUTPUT_DIR/rollouts/step-000012.parquet``
(and ``step-000012-1.parquet`` ... for the extra generation rounds of dynamic sampling),
written by the main process when the step's generation batch has been scored
(before the step trains on it), so a crash loses at most the current step and
memory holds one step at a time. ``--resume`` removes the files of steps after
the checkpoint, as it cuts ``metrics.jsonl``. ``log.rollouts``: ``all``,
``none``, or N (every Nth step: steps 1, N+1, 2N+1, ...). Each file carries the run
folder's format (``grpo.format`` in its schema metadata, :data:`grpo_core.runfiles.FORMAT`).
The trainer's writer is :mod:`grpo_core.trainer.rollout_log`; this module reads and writes
the files, and turns a scored batch into their rows.

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
from pathlib import Path
from typing import Any

from grpo_core.base.errors import GrpoError
from grpo_core.rewards.environments import count_tool_calls, transcript
from grpo_core.runfiles import FORMAT, ROLLOUTS, format_problem

FOLDER = ROLLOUTS
OURS = ("step", "stage", "round", "group", "prompt_index", "prompt", "completion", "tokens", "truncated",
        "tool_calls", "total", "advantage")
_FILE_RE = re.compile(r"^step-(\d+)(?:-(\d+))?\.parquet$")
METADATA = b"grpo.format"  # the key of the run folder's format in each file's schema metadata


def logged(step: int, every: int) -> bool:
    """Is ``step`` (1-based) one that ``log.rollouts`` keeps?"""
    return every > 0 and (step - 1) % every == 0


def prompt_text(prompt: Any) -> str:
    """The last user message of a conversational prompt, or the prompt itself."""
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        content = (users or prompt or [{}])[-1].get("content", "")
        return content if isinstance(content, str) else " ".join(
            p.get("text", "") for p in content if isinstance(p, dict))
    return str(prompt)


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
    table = pa.Table.from_pylist(records)
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), METADATA: str(FORMAT).encode()}),
                   tmp)
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
    tables = [read_file(p) for p in chosen]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]


def read_file(path: Path):
    """One file of the log as a pyarrow Table; one written in a newer run-folder format than
    this grpo reads is refused (GrpoError) instead of misread. A file without the format is 1."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    raw = (table.schema.metadata or {}).get(METADATA)
    found: int | str | None = None
    if raw is not None:
        try:
            found = int(raw)
        except ValueError:
            found = raw.decode(errors="replace")
    problem = format_problem(found, f"{Path(path).parent.name}/{Path(path).name}")
    if problem:
        raise GrpoError(problem)
    return table


__all__ = ["FOLDER", "OURS", "METADATA", "logged", "rows", "write", "read", "read_file", "files", "truncate",
           "prompt_text", "finite_or_none"]
