"""grpo's own figures in the trackers named in ``report_to``, beside TRL's.

TRL's integrations (transformers' ``TrackioCallback``, ``WandbCallback``,
``TensorBoardCallback``, ``MLflowCallback``) already send every figure TRL logs, grpo's
included: ``tokens/*``, ``sampling/*`` and ``eval/accuracy`` go through TRL's metrics, and
trackio, wandb and TensorBoard file them under ``train/`` (``train/tokens/teaching_share``).
What they never see, this callback sends to the same runs, through each integration's
own handle:

- held-out accuracy under its own name, ``eval/accuracy`` (where a tracker keeps
  evaluations; TRL's copy stays under ``train/eval/accuracy``; MLflow already has it);
- health events (``health.jsonl``: the divergence alarm, no signal, collapse, KL, a flat
  reward, non-finite updates) as the tracker's alerts where it has them (trackio, wandb),
  else as logged text (TensorBoard's text tab, MLflow artifacts under ``grpo/health/``);
- the rollout log as a table per logged step (``grpo/rollouts``): the step's first
  :data:`TABLE_GROUPS` whole groups (trained ones first, under dynamic sampling), each
  completion with its prompt, every reward, the total, the advantage, the round.

It reads what the run writes (``health.jsonl`` and ``rollouts/step-*.parquet``), from where
it stopped, on the main process, after the other monitors have spoken for the step: one
small file per logged step, so the cost does not grow with the run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_core.run.heldout import METRIC
from grpo_core.runfiles import HEALTH
from grpo_core.runfiles import rollouts as rollout_log
from grpo_core.runfiles.jsonl import jsonl_records

TABLE_GROUPS = 2  # whole groups per logged step in the rollouts table
TABLE = "grpo/rollouts"
SHOWN = ("step", "round", "group", "trained", "prompt", "completion", "tokens", "truncated")  # then rewards, total, advantage
TRACKERS = ("trackio", "wandb", "tensorboard", "mlflow")


def _title(event: dict) -> str:
    return f"grpo health: {event.get('check', 'event')}"


def _text(event: dict) -> str:
    return f"step {event.get('step')}: {event.get('message', '')}"


class _Trackio:
    """trackio: alerts, and a ``trackio.Table``, in the row TRL's callback has just logged
    (trackio numbers its rows; a row of our own would shift TRL's figures by one a step)."""

    name = "trackio"

    def __init__(self, callback):
        import trackio

        self.trackio = trackio

    def send(self, step: int, figures: dict, events: list[dict], table: tuple | None) -> None:
        for event in events:  # at trackio's current row: the step's
            self.trackio.alert(title=_title(event), text=_text(event), level=self.trackio.AlertLevel.WARN)
        values: dict[str, Any] = dict(figures)
        if table is not None:
            values[TABLE] = self.trackio.Table(columns=table[0], data=table[1])
        if values:
            run = self.trackio.context_vars.current_run.get()
            row = getattr(run, "_next_step", None)  # (no public name for it; without it, a row of our own)
            self.trackio.log({**values, "train/global_step": step}, step=max(row - 1, 0) if row else None)


class _Wandb:
    """W&B: ``run.alert`` and a ``wandb.Table``, on the step axis TRL's callback defines
    (``train/global_step``)."""

    name = "wandb"

    def __init__(self, callback):
        import wandb

        self.wandb = wandb

    def send(self, step: int, figures: dict, events: list[dict], table: tuple | None) -> None:
        run = self.wandb.run
        if run is None:
            return
        for event in events:
            run.alert(title=_title(event), text=_text(event), level=self.wandb.AlertLevel.WARN)
        values: dict[str, Any] = dict(figures)
        if table is not None:
            values[TABLE] = self.wandb.Table(columns=table[0], data=table[1])
        if values:
            run.log({**values, "train/global_step": step})


class _TensorBoard:
    """TensorBoard has no alerts: events and tables go to its text tab, written with the
    integration's own writer into its event file. The tab renders markdown and HTML, so the
    table's text is escaped (:func:`markdown`); trackio (0.4x) shows a table cell as plain text, so
    it, W&B and MLflow get the text as written."""

    name = "tensorboard"

    def __init__(self, callback):
        self.callback = callback

    def send(self, step: int, figures: dict, events: list[dict], table: tuple | None) -> None:
        writer = getattr(self.callback, "tb_writer", None)
        if writer is None:
            return
        for key, value in figures.items():
            writer.add_scalar(key, value, step)
        for event in events:
            writer.add_text(f"grpo/health/{event.get('check', 'event')}", _text(event), step)
        if table is not None:
            writer.add_text(TABLE, markdown(*table), step)
        writer.flush()


class _MLflow:
    """MLflow has no alerts and already logs ``eval/accuracy`` by its name: events as text
    artifacts, the table with ``mlflow.log_table``, both under ``grpo/``."""

    name = "mlflow"

    def __init__(self, callback):
        import mlflow

        self.mlflow = mlflow

    def send(self, step: int, figures: dict, events: list[dict], table: tuple | None) -> None:
        if self.mlflow.active_run() is None:
            return
        for event in events:
            self.mlflow.log_text(_text(event) + "\n",
                                 f"grpo/health/step-{step:06d}-{event.get('check', 'event')}.txt")
        if table is not None:
            columns, data = table
            self.mlflow.log_table({c: [row[i] for row in data] for i, c in enumerate(columns)},
                                  artifact_file=f"{TABLE}/step-{step:06d}.json")


# transformers' integration callback class name -> the sink that speaks to it
SINKS = {"TrackioCallback": _Trackio, "WandbCallback": _Wandb, "TensorBoardCallback": _TensorBoard,
         "MLflowCallback": _MLflow}


# every line break str.splitlines knows, not only \n (a sampled completion can hold \r or \x1c)
LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# what markdown (inline, tables) or HTML would read as markup: each written as a character reference,
# which both show as the character itself
MARKUP = re.compile(r"[\\`*_\[\]()!<>&|~{}#:\"'=$^]")
SPACES = re.compile(" {2,}|^ | $")  # runs a browser would fold into one, and spaces it drops at a line's ends


def markdown(columns: list[str], data: list[list]) -> str:
    """A markdown table for TensorBoard's text tab, whose cells show exactly what was written:
    markup characters as character references (``2*3*4`` is not emphasis, ``</table>`` not a
    tag), each line break a ``<br>``, spaces a browser would fold kept (``&nbsp;``)."""
    lines = ["| " + " | ".join(map(text_cell, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(text_cell(v) for v in row) + " |" for row in data]
    return "\n".join(lines)


def text_cell(v) -> str:
    """One cell of :func:`markdown`: a number as figures, text escaped (see there), None empty."""
    if isinstance(v, float):
        return f"{v:.3f}"
    if v is None or isinstance(v, (bool, int)):
        return "" if v is None else str(v)
    lines = LINE_BREAK.split(MARKUP.sub(lambda m: f"&#{ord(m.group())};", str(v)))
    return "<br>".join(SPACES.sub(lambda m: "&nbsp;" * len(m.group()), line) for line in lines)


def sample(rows: list[dict], groups: int = TABLE_GROUPS) -> tuple[list[str], list[list]] | None:
    """The table of one step's rows: its first ``groups`` whole groups (trained ones first),
    our columns, then each reward, the total and the advantage."""
    if not rows:
        return None
    keys: list[tuple] = []
    for r in rows:
        key = (r.get("trained") is False, r.get("round") or 0, r.get("group"))
        if key not in keys:
            keys.append(key)
    chosen = set(sorted(keys)[:groups])
    kept = [r for r in rows if (r.get("trained") is False, r.get("round") or 0, r.get("group")) in chosen]
    rewards = [k for k in rows[0] if k.startswith("reward/")]
    columns = [c for c in SHOWN if c in rows[0]] + rewards + ["total", "advantage"]
    return columns, [[_cell(r.get(c)) for c in columns] for r in kept]


def _cell(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class TrackerCallback(TrainerCallback):
    """Sends grpo's figures, health events and rollout tables to the run's trackers (see the
    module docstring); found at :meth:`bind` among the trainer's integration callbacks."""

    def __init__(self, root: Path, offset: int = 0, groups: int = TABLE_GROUPS, warn=None):
        self.root = Path(root)
        self.offset = offset
        self.groups = groups
        self.warn = warn or (lambda message: None)
        self.sinks: list = []
        self._failed: set[str] = set()  # trackers that failed once: said once, then left alone
        self._health_at = 0  # bytes of health.jsonl already read
        self._sent_step = offset  # rollout files up to this (global) step are sent

    def bind(self, trainer) -> None:
        self.sinks = [SINKS[type(cb).__name__](cb) for cb in trainer.callback_handler.callbacks
                      if type(cb).__name__ in SINKS]

    def on_train_begin(self, args, state, control, **kw):
        path = self.root / HEALTH
        self._health_at = path.stat().st_size if path.is_file() else 0  # events of earlier stages: sent then
        self._sent_step = self.offset + state.global_step  # a resumed stage: the steps before were sent

    def on_log(self, args, state, control, logs=None, **kw):
        if not self.sinks or not state.is_world_process_zero or not logs:
            return
        try:
            self.send(state.global_step, logs)
        except Exception as exc:  # noqa: BLE001 - a tracker's trouble must never cost the training run
            self._say("reading the run's files", exc)

    def send(self, step: int, logs: dict) -> None:
        figures = {}
        accuracy = logs.get(METRIC)
        if isinstance(accuracy, (int, float)) and math.isfinite(accuracy):
            figures[METRIC] = float(accuracy)
        events = self.new_events()
        tables = self.new_tables(self.offset + step)
        for sink in self.sinks:
            try:
                for i, table in enumerate(tables or [None]):  # type: ignore[list-item]  # no table: one send
                    sink.send(step, figures if i == 0 else {}, events if i == 0 else [], table)
            except Exception as exc:  # noqa: BLE001 - one tracker failing leaves the others and training alone
                self._say(sink.name, exc)

    def _say(self, what: str, exc: Exception) -> None:
        if what not in self._failed:
            self._failed.add(what)
            self.warn(f"warning: grpo's figures could not go to the trackers ({what}: {type(exc).__name__}: "
                      f"{exc}); training goes on, and the run's own files keep everything.")

    def new_events(self) -> list[dict]:
        """The complete lines ``health.jsonl`` gained since the last call."""
        path = self.root / HEALTH
        if not path.is_file():
            return []
        with open(path, "rb") as f:
            f.seek(self._health_at)
            data = f.read()
        whole = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next call
        self._health_at += len(whole)
        return jsonl_records(whole.splitlines())

    def new_tables(self, upto: int) -> list[tuple]:
        """A table for each logged step in (last sent, ``upto``]."""
        import pyarrow.parquet as pq

        by_step: dict[int, list[Path]] = {}
        for step, path in rollout_log.files(self.root / rollout_log.FOLDER):
            if self._sent_step < step <= upto:
                by_step.setdefault(step, []).append(path)
        self._sent_step = max(self._sent_step, upto)
        out = []
        for step in sorted(by_step):
            rows = [r for path in by_step[step] for r in pq.read_table(path).to_pylist()]
            table = sample(rows, self.groups)
            if table is not None:
                out.append(table)
        return out


def callback(report_to, root: Path, offset: int = 0, warn=None) -> TrackerCallback | None:
    """The stage's tracker callback, or None when ``report_to`` names no tracker."""
    names = set(report_to or ())
    if not names & {*TRACKERS, "all"}:
        return None
    return TrackerCallback(root, offset, warn=warn)


__all__ = ["TrackerCallback", "callback", "sample", "markdown", "text_cell", "TABLE", "TABLE_GROUPS", "TRACKERS"]
