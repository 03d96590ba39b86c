"""Dynamic sampling (DAPO): every group trained on teaches something.

A group whose completions all score the same has zero advantage: it costs a
generation and moves nothing. With ``sampling: {dynamic: true, max_rounds: 3}``,
after a generation batch is scored, its flat groups are dropped and groups for
fresh prompts are generated in their place, until every process has its batch of
groups with a spread or ``max_rounds`` generations were made. If the rounds run
out, the places left are filled with the first flat groups generated, so the
batch keeps its shape (they add nothing to the policy gradient; the loss
normaliser counts their tokens, as it would without dynamic sampling), and the
flat share trained on is logged.

- The decision is taken on TRL's gathered rewards, so every process takes the
  same one and makes the same number of rounds (its collectives stay in step);
  each process fills its own places from its own groups, which needs the groups
  of a generation batch not to straddle processes.
- Fresh prompts come from the training set in a seeded order of their own
  (:class:`PromptStream`); its position is saved with every checkpoint
  (``grpo_dynamic.json``), so ``--resume`` draws what the uninterrupted run drew.
- "Flat" is judged on the weighted total (what TRL's advantage is computed
  from), or on one reward's scores with ``sampling.metric: math.correctness``
  (verl's ``filter_groups.metric: acc``): a length reward's spread then does
  not hide groups that all fail, or all pass, the task.
- Metrics per step: ``sampling/rounds``, ``sampling/groups_generated``,
  ``sampling/groups_dropped`` and ``sampling/flat_share_trained``. TRL's own reward
  figures (``reward``, ``reward_std``, ``frac_reward_zero_std``, ``rewards/<name>/mean``
  and ``/std``), which the health checks, the divergence alarm and adaptive weights
  read, are the trained batch's; the same figures over every round generated, dropped
  groups included, are logged apart as ``sampling/all_rounds/<figure>``.
- The reference model's log-probs (beta > 0) are computed once, for the batch
  trained, not for every round: a dropped group costs its generation and scoring only.
- ``sampling.oversample: k`` makes each round one generate call for ``k`` times the
  groups the batch holds (the first round: TRL's prompts and fresh ones after them), as
  verl's ``gen_batch_size`` above its ``train_batch_size``: the first groups with a
  spread are trained, the rest dropped. Fewer, larger generate calls can cost fewer
  seconds a step where a batch of sequences generates in little more time than one, at
  the price of the dropped groups' tokens; on 2 CPU cores they did not (1.035x the
  seconds, 1.91x the tokens: ``bench/oversample.py``, docs/training.md).

verl (``algorithm.filter_groups``), ms-swift (``--dynamic_sample``) and the DAPO
paper do the same on their own trainers; TRL has no such option (#3708).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.trainer.batch import Batch, Processes, Round, Score, completion_tokens

STATE = "grpo_dynamic.json"
# batch entries laid out per prompt (left-padded) and per completion (right-padded)
PROMPT_KEYS = {"prompt_ids": "pad", "prompt_mask": 0}
COMPLETION_KEYS = {"completion_ids": "pad", "completion_mask": 0, "tool_mask": 0, "old_per_token_logps": 0.0,
                   "ref_per_token_logps": 0.0, "sampling_per_token_logps": 0.0, "importance_sampling_ratio": 0.0}
ROW_KEYS = ("advantages",)


@dataclass(frozen=True)
class DynamicSettings:
    """``sampling.max_rounds`` and ``sampling.metric`` (dynamic sampling is on when the
    trainer is given these)."""

    max_rounds: int = 3  # generations per batch at most
    metric: str = "total"  # flat on the weighted total, or on this reward's scores
    oversample: int = 1  # groups generated per place, in each round's one generate call


def own(flags: Sequence[bool], process: int, processes: int) -> Sequence[bool]:
    """A process's groups among a round's gathered flags: every process generated as many
    (``len(flags) // processes``), and process ``p``'s come ``p``-th."""
    n = len(flags) // processes
    return flags[process * n:(process + 1) * n]


def enough(flat_by_round: list[list[bool]], local: int, processes: int) -> bool:
    """The rounds' decision: does every process have ``local`` groups with a spread among
    the rounds so far (its own, :func:`own`; the flags are gathered, the same on every
    process)?"""
    return all(sum(not f for flags in flat_by_round for f in own(flags, p, processes)) >= local
               for p in range(processes))


def flat_groups(per_reward: Sequence[Sequence], weights: Sequence[float], group_size: int) -> list[bool]:
    """Per group of ``group_size`` consecutive completions: do their weighted totals
    (TRL's nansum) all agree? A group with fewer than two scorable completions is flat."""
    n = len(per_reward[0]) if per_reward else 0
    totals = []
    for i in range(n):
        values = [(w, float(col[i])) for w, col in zip(weights, per_reward) if col[i] is not None]
        finite = [(w, v) for w, v in values if math.isfinite(v)]
        totals.append(sum(w * v for w, v in finite) if finite else math.nan)
    out = []
    for start in range(0, n, group_size):
        group = [t for t in totals[start:start + group_size] if math.isfinite(t)]
        out.append(len(group) < 2 or max(group) - min(group) <= 1e-6 * max(1.0, abs(max(group))))
    return out


def choose(flat_by_round: list[list[bool]], need: int) -> tuple[list[tuple[int, int]], int]:
    """Which (round, group) fill a process's ``need`` places: groups with a spread in
    the order generated, then, when the rounds ran out, the first flat ones. Returns
    the picks and how many of them are flat."""
    spread = [(r, g) for r, flags in enumerate(flat_by_round) for g, flat in enumerate(flags) if not flat]
    picks = spread[:need]
    flat = [(r, g) for r, flags in enumerate(flat_by_round) for g, flat in enumerate(flags) if flat]
    filler = flat[:need - len(picks)]
    return picks + filler, len(filler)


def merge(outputs: list[dict], picks: list[tuple[int, int]], group_size: int, pad_id: int) -> dict:
    """One batch of the picked groups' rows, padded to common widths."""
    import torch

    rows: dict[int, list[int]] = {r: [] for r in range(len(outputs))}
    order = []
    for r, g in picks:
        order.append((r, len(rows[r])))
        rows[r].extend(range(g * group_size, (g + 1) * group_size))
    first = outputs[0]
    unknown = set(first) - set(PROMPT_KEYS) - set(COMPLETION_KEYS) - set(ROW_KEYS) - {"num_items_in_batch"}
    if unknown:
        raise ValueError(f"dynamic sampling cannot merge {sorted(unknown)} (vision inputs or vLLM importance "
                         f"sampling); turn sampling.dynamic off for this run.")
    out = {}
    for key in first:
        if key == "num_items_in_batch":
            continue
        parts = []
        for (r, start) in order:
            index = torch.tensor(rows[r][start:start + group_size], device=outputs[r][key].device)
            parts.append(outputs[r][key].index_select(0, index))
        out[key] = _concat(key, parts, pad_id)
    return out


def _concat(key: str, parts: list, pad_id: int):
    import torch

    if key in ROW_KEYS:
        return torch.cat(parts)
    width = max(p.shape[1] for p in parts)
    fill = PROMPT_KEYS.get(key, COMPLETION_KEYS.get(key))
    value = pad_id if fill == "pad" else fill
    left = key in PROMPT_KEYS
    padded = []
    for p in parts:
        extra = width - p.shape[1]
        if extra:
            pad = torch.full((p.shape[0], extra, *p.shape[2:]), value, dtype=p.dtype, device=p.device)
            p = torch.cat([pad, p] if left else [p, pad], dim=1)
        padded.append(p)
    return torch.cat(padded)


class PromptStream:
    """Fresh prompts in a seeded order of their own, reshuffled each pass; its position
    is all the state a checkpoint needs."""

    def __init__(self, size: int, seed: int, position: int = 0):
        self.size, self.seed, self.position = size, seed, position

    def take(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            epoch, offset = divmod(self.position, self.size)
            order = list(range(self.size))
            random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
            step = min(n - len(out), self.size - offset)
            out += order[offset:offset + step]
            self.position += step
        return out

    def save(self, folder: Path) -> None:
        (Path(folder) / STATE).write_text(json.dumps({"seed": self.seed, "position": self.position}) + "\n")

    def load(self, folder: Path) -> bool:
        path = Path(folder) / STATE
        if not path.is_file():
            return False
        state = json.loads(path.read_text())
        self.seed, self.position = int(state["seed"]), int(state["position"])
        return True


class DynamicSampling:
    """The rounds of one step (see the module docstring) and its prompt stream. It sees the
    batch, the chain's score step and the processes, never the trainer."""

    def __init__(self, settings: DynamicSettings, dataset, *, group_size: int, local_batch: int, seed: int,
                 pad_id: int = 0):
        if local_batch % group_size:
            raise ConfigError(
                f"sampling.dynamic needs each process's generation batch (per_device_train_batch_size x "
                f"steps_per_generation = {local_batch}) to hold whole groups of num_generations = {group_size}: "
                f"make it a multiple of {group_size}.")
        self.settings = settings
        self.dataset = dataset
        self.group_size = group_size
        self.pad_id = pad_id  # the tokenizer's, for completions merged from rounds of other widths
        self.stream = PromptStream(len(dataset), seed=seed)
        # a prompt sampler's choice of the fresh rows (sampling.prompts), given the stream's
        self.choose: Callable[[list[int]], list[int]] | None = None

    def generate(self, batch: Batch, score: Score, processes: Processes) -> Batch:
        """Rounds of generation (``score``: the chain's score step) until each process has its
        groups with a spread (or the rounds run out), merged into the rows trained
        (``batch.tensors``, TRL's shape); ``batch.picks`` says which (round, group) they are."""
        g, procs, me = self.group_size, processes.num_processes, processes.process_index
        local = len(batch.inputs) // g
        rounds: list[Round] = []
        flags: list[list[bool]] = []
        for index in range(self.settings.max_rounds):
            rounds.append(score(self.round_prompts(batch.inputs, index, local, procs, me), index))
            flags.append(self.flat(rounds[-1].logs, batch.names, batch.weights))
            if enough(flags, local, procs):
                break
        chosen = [choose([list(own(fl, p, procs)) for fl in flags], local) for p in range(procs)]
        # (round, group over every process) of each group trained
        picks = [(r, p * (len(flags[r]) // procs) + group) for p, (picked, _) in enumerate(chosen)
                 for r, group in picked]
        whole = len(rounds) == 1 and self.settings.oversample == 1  # TRL's batch as it came
        # in the batch's row order (TRL's own order when whole); the rollout log marks them trained
        batch.picks = sorted(picks) if whole else picks
        for name, value in metrics(flags, chosen, local, procs).items():
            batch.record(f"sampling/{name}", value)
        if whole:
            batch.tensors = rounds[0].tensors
            return batch
        scores = [{n: list(r.logs["rewards"][n]) for n in batch.names} for r in rounds]
        batch.rewards = trained_scores(scores, batch.names, picks, g)  # what adaptive weights read
        batch.figures = trained_figures(batch.rewards, batch.weights, g)  # the log step puts them in TRL's place
        out = batch.tensors = merge([r.tensors for r in rounds], chosen[me][0], g, self.pad_id)
        out["num_items_in_batch"] = processes.gather(completion_tokens(out).sum()).sum()
        return batch

    def round_prompts(self, inputs: list[dict], round_: int, local: int, procs: int, me: int) -> list[dict]:
        """A round's prompts, each repeated for its group: ``oversample`` times ``local``
        groups, the first round's first ``local`` TRL's own."""
        k = self.settings.oversample
        if round_ == 0:
            return (inputs + self.fresh(local * (k - 1), procs, me)) if k > 1 else inputs
        return self.fresh(local * k, procs, me)

    def flat(self, logs: Mapping[str, Any], names: Sequence[str], weights: Sequence[float]) -> list[bool]:
        """Per group of the batch just scored (TRL's gathered logs: the same on every
        process, and so is the decision): flat on the total, or on the reward ``metric``."""
        rewards = logs["rewards"]
        if self.settings.metric == "total":
            return flat_groups([list(rewards[n]) for n in names], list(weights), self.group_size)
        return flat_groups([list(rewards[self.settings.metric])], [1.0], self.group_size)

    def fresh(self, local: int, processes: int = 1, me: int = 0) -> list[dict]:
        """``local`` fresh prompts for process ``me`` (every process draws the same ones and
        takes its share), each repeated for its group."""
        drawn = self.stream.take(local * processes)
        if self.choose is not None:
            drawn = self.choose(drawn)
        return [self.dataset[i] for i in drawn[me * local:(me + 1) * local] for _ in range(self.group_size)]

    def save(self, folder: Path) -> None:
        self.stream.save(folder)

    def load(self, folder: Path) -> bool:
        return self.stream.load(folder)


def _nanmean(values: list[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _nanstd(values: list[float]) -> float:
    """As TRL's nanstd: the sample standard deviation (n - 1) of the finite values."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if len(finite) < 2:
        return math.nan
    m = sum(finite) / len(finite)
    return math.sqrt(sum((v - m) ** 2 for v in finite) / (len(finite) - 1))


def trained_scores(scores: list[dict], names: Sequence[str], picks: list[tuple[int, int]],
                   group_size: int) -> dict[str, list[float]]:
    """Each reward's scores on the trained batch: the ``picks`` ((round, group) over every
    process) of the rounds' gathered ``scores`` (None as NaN, as TRL's tensors hold it)."""
    return {n: [math.nan if (v := scores[r][n][i]) is None else float(v)
                for r, group in picks for i in range(group * group_size, (group + 1) * group_size)]
            for n in names}


def trained_figures(per: dict[str, list[float]], weights: Sequence[float], group_size: int) -> dict[str, float]:
    """TRL's step figures computed on the trained batch's scores (:func:`trained_scores`),
    as TRL computes them: a row that every reward left unscored has no total; a group's
    spread is zero when its sample standard deviation is within 1e-8 of 0 (NaN is not)."""
    names = list(per)
    rows = len(per[names[0]]) if names else 0
    totals = []
    for i in range(rows):
        values = [per[n][i] for n in names]
        finite = [w * v for w, v in zip(weights, values) if math.isfinite(v)]
        totals.append(sum(finite) if finite else math.nan)
    groups = [_nanstd(totals[k:k + group_size]) for k in range(0, rows, group_size)]
    zero = sum(abs(std) <= 1e-8 for std in groups if not math.isnan(std))
    out = {"reward": _nanmean(totals), "reward_std": _nanstd(totals), "frac_reward_zero_std": zero / len(groups)}
    for n in names:
        out[f"rewards/{n}/mean"], out[f"rewards/{n}/std"] = _nanmean(per[n]), _nanstd(per[n])
    return out


def relog(logged: MutableMapping[str, list[float]], before: Mapping[str, int], figures: Mapping[str, float]) -> None:
    """Each figure's entries made during the rounds become one, the trained batch's; their
    mean over the rounds is kept as ``sampling/all_rounds/<figure>``."""
    for key, value in figures.items():
        values = logged.get(key)
        if values is None:
            continue
        rounds = values[before.get(key, 0):]
        del values[before.get(key, 0):]
        values.append(value)
        if rounds:
            logged.setdefault(f"sampling/all_rounds/{key}", []).append(_nanmean(rounds))


def metrics(flat_by_round: list[list[bool]], chosen: list[tuple[list, int]], local: int, processes: int) -> dict:
    """The step's ``sampling/*`` metrics from its rounds' flags and each process's picks."""
    generated = sum(len(flags) for flags in flat_by_round)
    return {"rounds": float(len(flat_by_round)), "groups_generated": float(generated),
            "groups_dropped": float(generated - local * processes),
            "flat_share_trained": sum(flat for _, flat in chosen) / (local * processes)}


__all__ = ["DynamicSettings", "DynamicSampling", "enough", "own", "metrics", "trained_scores", "trained_figures", "relog", "flat_groups", "choose", "merge", "PromptStream",
           "STATE"]
