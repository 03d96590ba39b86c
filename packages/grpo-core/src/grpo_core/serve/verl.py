"""grpo's rewards in verl: ``compute_score`` for ``custom_reward_function``.

verl loads this file by path (``custom_reward_function.path``, the function named by
``.name``) and merges ``.reward_kwargs`` into every call. Name the rewards there
(``rewards: ["math.correctness:2", "format.think_answer_r1"]``) or a grpo config
(``config: examples/quickstart.yaml``, its first stage or ``stage:``). ``ground_truth``
fills the column ``label_column`` (``answer``); the keys of ``extra_info`` fill the other
columns the rewards read. Scoring is ``grpo score``'s (``rewards/scoring.py:score_batch``)
under the training guard: a time limit per call, an item that raises scores None alone.
End-of-sequence text left at a solution's end (``<|im_end|>``, ``</s>``, ... and the
markers in ``eos``) is removed first, as ``grpo serve`` does (``responses.Ends``).

Two forms, as verl's reward managers call them:

- one item (``naive``, ``prime``, ``dapo``): ``compute_score(data_source, solution_str,
  ground_truth, extra_info=None, **reward_kwargs)`` -> ``{"score": total, <reward>: value, ...,
  "unscored": n}`` (a reward that gave no score is NaN, and counted in ``unscored``);
- a batch (``batch``): ``compute_score(data_sources=..., solution_strs=..., ground_truths=...,
  extra_infos=..., **reward_kwargs)`` -> one such dict per item.
"""

from __future__ import annotations

import math
import threading

from grpo_core.base.errors import GrpoError
from grpo_core.base.params import RESERVED_COLUMNS
from grpo_core.serve.responses import Ends
from grpo_core.serve.scoring import RewardSet, Slot

_LOCAL = threading.local()  # each thread its own composition (a gate's memo is never shared)


def _slot(rewards, config, stage, time_limit) -> Slot:
    if (rewards is None) == (config is None):
        raise GrpoError("grpo's compute_score needs reward_kwargs 'rewards' (a list of specs) or 'config' "
                        "(a grpo config's path), one of the two.")
    if isinstance(rewards, str):
        rewards = [s.strip() for s in rewards.split(",") if s.strip()]
    key = (tuple(rewards) if rewards is not None else None, config, stage, time_limit)
    cache = getattr(_LOCAL, "slots", None)
    if cache is None:
        cache = _LOCAL.slots = {}
    if key not in cache:
        chosen = RewardSet.from_config(config, stage) if config else RewardSet.from_specs(list(rewards))
        if time_limit is not None:
            chosen.time_limit = float(time_limit)
        cache[key] = Slot(chosen.compose(), chosen.weights)
    return cache[key]


def _columns(slot: Slot, ground_truths: list, extra_infos: list, label_column: str) -> dict:
    columns = {label_column: list(ground_truths)}
    wanted = {c for f in slot.funcs for c in f.required_columns} - {label_column}
    for infos in (extra_infos or ()):
        if isinstance(infos, dict):  # verl's bag of row data; a key TRL's keywords take no reward can read
            wanted |= {k for k in infos if k not in columns and k not in RESERVED_COLUMNS}
    for name in sorted(wanted):
        columns[name] = [info.get(name) if isinstance(info, dict) else None for info in extra_infos or [None] * len(ground_truths)]
    return columns


def _items(slot: Slot, solutions: list, ground_truths: list, extra_infos: list, label_column: str,
           ends: Ends) -> list[dict]:
    columns = _columns(slot, ground_truths, extra_infos, label_column)
    prompts = columns.pop("prompt", None)
    out = slot.score([ends.trim(s) for s in solutions], prompts, columns)
    items = []
    for i, total in enumerate(out["total"]):
        item = {"score": float(total)}
        for name, values in out["scores"].items():
            v = values[i]
            item[name] = math.nan if v is None else float(v)
        item["unscored"] = sum(values[i] is None for values in out["scores"].values())
        items.append(item)
    return items


def _ends(eos) -> Ends:
    if not eos:
        return _DEFAULT_ENDS
    return Ends.of([eos] if isinstance(eos, str) else list(eos))


_DEFAULT_ENDS = Ends.of()


def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, *, rewards=None,
                  config=None, stage=None, label_column: str = "answer", time_limit=None, eos=None,
                  data_sources=None, solution_strs=None, ground_truths=None, extra_infos=None, **ignored):
    """verl's custom reward function; see the module docstring."""
    slot = _slot(rewards, config, stage, time_limit)
    ends = _ends(eos)
    if solution_strs is not None:
        n = len(solution_strs)
        infos = list(extra_infos) if extra_infos is not None else [None] * n
        truths = list(ground_truths) if ground_truths is not None else [None] * n
        if len(truths) != n or len(infos) != n:
            raise GrpoError(f"compute_score: {n} solution_strs with {len(truths)} ground_truths and "
                            f"{len(infos)} extra_infos; verl passes one of each per item.")
        return _items(slot, list(solution_strs), truths, infos, label_column, ends)
    if solution_str is None:
        raise GrpoError("compute_score needs solution_str (or solution_strs, the batch form).")
    return _items(slot, [solution_str], [ground_truth], [extra_info], label_column, ends)[0]


__all__ = ["compute_score"]
