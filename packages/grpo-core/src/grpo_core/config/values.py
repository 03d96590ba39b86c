"""One value checker for every key of a config: grpo's settings (their types, choices and
bounds read from the schema), lora's peft fields and GRPOConfig's (read from the
dataclasses' own annotations, metadata and help by :mod:`grpo_core.config.fields`, cached per
installed version so a check imports no TRL), with the ranges TRL checks only late, in one table (``RANGES``).
``load_config`` runs it on every value, so ``grpo train``, its ``--dry-run`` and ``grpo
check`` refuse a wrong value by its key before anything loads."""

from __future__ import annotations

import dataclasses
import difflib
import enum
import math
import types
import typing
from dataclasses import dataclass
from typing import Any

_NOUNS = {"bool": "true or false", "int": "a whole number", "float": "a number", "str": "text", "list": "a list",
          "dict": "a mapping"}
NO_DEFAULT = object()


def shown(value: Any) -> str:
    """A value as YAML writes it (true, null, auto)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


@dataclass(frozen=True)
class Range:
    """Where a number must lie: ``low``/``high`` (inclusive unless ``*_open``), plus values
    outside them that mean something (``also``: max_steps -1); ``note`` says why."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    also: tuple = ()
    note: str = ""

    def holds(self, value: float) -> bool:
        if value in self.also:
            return True
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def text(self, noun: str) -> str:
        """``a number in (0, 1]``, ``a whole number >= 1``."""
        low, high = _num(self.low), _num(self.high)
        if self.low is not None and self.high is not None:
            out = f"{noun} in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        elif self.low is not None:
            out = f"{noun} {'>' if self.low_open else '>='} {low}"
        elif self.high is not None:
            out = f"{noun} {'<' if self.high_open else '<='} {high}"
        else:
            out = noun
        return out + "".join(f" or {_num(a)}" for a in self.also)

    def outside(self, whole: bool) -> list[float]:
        """Values just outside the range (what a test of it tries)."""
        step = 1 if whole else 0.5
        out = []
        if self.low is not None:
            out.append(self.low if self.low_open else self.low - step)
        if self.high is not None:
            out.append(self.high if self.high_open else self.high + step)
        return [v for v in out if v not in self.also]


def _num(value: float | None) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


@dataclass(frozen=True)
class ValueType:
    """What a key takes: ``accepts`` of bool, int, float, str, list, dict, null (float takes
    an int too); ``choices``: the only values it takes, when fixed; ``items``: what a
    list's items may be (and a text value's words, for a field whose text is a list:
    debug); ``obj``: a class a config file cannot write (only null is taken then)."""

    accepts: frozenset
    choices: tuple | None = None
    items: tuple | None = None
    obj: str | None = None
    kind: str = "text"  # how a command-line value is typed (overrides.cli_values)

    def as_dict(self) -> dict:
        return {"accepts": sorted(self.accepts), "choices": _listed(self.choices), "items": _listed(self.items),
                "obj": self.obj, "kind": self.kind}

    @classmethod
    def from_dict(cls, d: dict) -> ValueType:
        return cls(frozenset(d["accepts"]), _tupled(d.get("choices")), _tupled(d.get("items")), d.get("obj"),
                   d.get("kind", "text"))

    def noun(self, rng: Range | None = None) -> str:
        """``a whole number >= 1 or null``, ``true or false``, ``a number, 'auto' or null``."""
        parts = [_NOUNS[a] for a in ("bool", "int", "float", "str", "list", "dict") if a in self.accepts]
        if "float" in self.accepts and "int" in parts:
            parts.remove(_NOUNS["int"])
        if rng is not None and parts and parts[0] in (_NOUNS["int"], _NOUNS["float"]):
            parts[0] = rng.text(parts[0])
        if self.choices and "str" in self.accepts:
            texts = [c for c in self.choices if isinstance(c, str)]
            parts[parts.index(_NOUNS["str"])] = repr(texts[0]) if len(texts) == 1 else f"one of {', '.join(texts)}"
        if "null" in self.accepts:
            parts.append("null")
        text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1] if parts else "left out"
        return text + (f" (it takes a {self.obj} object, which a config file cannot write)" if self.obj else "")


def _listed(values: tuple | None) -> list | None:
    return None if values is None else list(values)


def _tupled(values: list | None) -> tuple | None:
    return None if values is None else tuple(values)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def _is(value: Any, choice: Any) -> bool:
    return value == choice and isinstance(value, bool) == isinstance(choice, bool)


def value_problem(key: str, value: Any, vtype: ValueType, rng: Range | None = None,
                  default: Any = NO_DEFAULT) -> str | None:
    """What is wrong with ``value`` for ``key`` (its type, its choices, its range), or None."""
    hint = "" if default is NO_DEFAULT else f" (default {shown(default)})"
    kind = _type_of(value)
    accepted = kind in vtype.accepts or (kind == "int" and "float" in vtype.accepts)
    if vtype.choices is not None and not any(_is(value, c) for c in vtype.choices):
        if not accepted or kind in {_type_of(c) for c in vtype.choices}:  # pad_to_multiple_of: 'auto' or a number
            return _choice_problem(key, value, vtype.choices, hint)
    bad = not accepted or (kind == "float" and not math.isfinite(value))
    if bad or (kind in ("int", "float") and rng is not None and not rng.holds(value)):
        quote = f" (quote it to mean the text: '{value}')" if not accepted and kind in ("int", "float", "bool") \
            and "str" in vtype.accepts and vtype.choices is None else ""
        return f"{key} is {_said(value)}; it must be {vtype.noun(rng)}{_note(rng)}{quote}{hint}."
    if vtype.items is not None:
        words = value.split() if kind == "str" and vtype.choices is None else value if kind == "list" else []
        for item in words:
            if not any(_is(item, c) for c in vtype.items):
                return _choice_problem(key, item, vtype.items, hint, listed=True)
    return None


def _said(value: Any) -> str:
    """A value in a message: as Python writes it, but null as YAML does."""
    return "null" if value is None else repr(value)


def _note(rng: Range | None) -> str:
    return f" ({rng.note})" if rng is not None and rng.note else ""


def _choice_problem(key: str, value: Any, choices: tuple, hint: str, listed: bool = False) -> str:
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1) if isinstance(value, str) else []
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    said = f"lists {_said(value)}; each must be one of" if listed else f"is {_said(value)}; use one of"
    return f"{key} {said} {', '.join(shown(c) for c in choices)}{guess}{hint}."


# ------------------------------------------------------------------ types from annotations


def from_annotation(annotation: Any, choices: Any = None) -> ValueType:
    """The ValueType an annotation describes (``int | None``, ``Literal['a', 'b']``, an
    Enum, ``list[Enum]``, a dataclass, ...); ``choices``: the field's own (metadata)."""
    accepts: set[str] = set()
    found: list = []
    items: list | None = None
    obj = None

    def walk(tp: Any) -> None:
        nonlocal items, obj
        origin = typing.get_origin(tp)
        if tp is type(None) or tp is None:
            accepts.add("null")
        elif origin in (typing.Union, types.UnionType):
            for arg in typing.get_args(tp):
                walk(arg)
        elif origin is typing.Literal:
            for arg in typing.get_args(tp):
                accepts.add(_type_of(arg))
                if isinstance(arg, str):
                    found.append(arg)
        elif tp is Any:
            accepts.update(("bool", "int", "float", "str", "list", "dict", "null"))
        elif tp in (bool, int, float, str):
            accepts.add(tp.__name__)
        elif tp in (list, tuple, set) or origin in (list, tuple, set):
            accepts.add("list")
            args = typing.get_args(tp)
            if args and isinstance(args[0], type) and issubclass(args[0], enum.Enum):
                items = [m.value for m in args[0]]
        elif tp is dict or origin is dict:
            accepts.add("dict")
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            accepts.add("str")
            found.extend(m.value for m in tp)
        else:
            obj = getattr(tp, "__name__", str(tp))

    walk(annotation)
    if any("[" in c for c in found):  # a pattern (peft's 'pissa_niter_[number of iters]'), not a fixed set
        found = []
    listed = list(choices) if choices else found
    if listed and "bool" in accepts:
        listed += [True, False]
    return ValueType(frozenset(accepts), tuple(dict.fromkeys(listed)) if listed else None,
                     tuple(items) if items else None, obj if not accepts - {"null"} else None)


def section_type(f: dataclasses.Field, annotation: Any) -> ValueType:
    """A schema field's ValueType: its annotation and its ``choices``."""
    if f.metadata.get("choices"):
        allowed = tuple(f.metadata["choices"])
        return ValueType(frozenset(_type_of(c) for c in allowed), allowed)
    return from_annotation(annotation)


def section_range(f: dataclasses.Field, vtype: ValueType) -> Range | None:
    """A schema field's bounds (``minimum``, ``maximum``; numbers are never negative)."""
    if not vtype.accepts & {"int", "float"}:
        return None
    low = f.metadata.get("minimum")
    return Range(low if low is not None else 0, f.metadata.get("maximum"))


# GRPOConfig values TRL takes without complaint and fails on mid-run, ignores, or trains wrongly
# with (num_iterations 0: "Done: 0 steps"); every other value's type comes from its annotation
RANGES: dict[str, Range] = {
    "temperature": Range(0, low_open=True, note="1.0 samples as the model is"),
    "top_p": Range(0, 1, low_open=True),
    "top_k": Range(0, note="0: no top-k filtering"),
    "min_p": Range(0, 1),
    "repetition_penalty": Range(0, low_open=True, note="1.0: none"),
    "learning_rate": Range(0),
    "max_steps": Range(1, also=(-1,), note="-1: num_train_epochs decides"),
    "num_train_epochs": Range(0, low_open=True),
    "num_iterations": Range(1, note="updates per generated batch"),
    "max_completion_length": Range(1),
    "per_device_train_batch_size": Range(1),
    "per_device_eval_batch_size": Range(1),
    "gradient_accumulation_steps": Range(1),
    "generation_batch_size": Range(1),
    "steps_per_generation": Range(1),
    "num_generations": Range(2, note="GRPO compares the completions of a prompt"),
    "num_generations_eval": Range(1),
    "max_grad_norm": Range(0, note="0: no clipping"),
    "beta": Range(0, note="0: no KL penalty"),
    "epsilon": Range(0),
    "epsilon_high": Range(0),
    "delta": Range(0, low_open=True),
    "warmup_steps": Range(0, note="a step count, or a ratio of the steps below 1"),
    "weight_decay": Range(0),
    "adam_beta1": Range(0, 1, high_open=True),
    "adam_beta2": Range(0, 1, high_open=True),
    "adam_epsilon": Range(0),
    "label_smoothing_factor": Range(0, 1, high_open=True),
    "logging_steps": Range(0, low_open=True, note="a step count, or a ratio of the steps below 1"),
    "save_steps": Range(0, low_open=True, note="a step count, or a ratio of the steps below 1"),
    "eval_steps": Range(0, low_open=True, note="a step count, or a ratio of the steps below 1"),
    "eval_delay": Range(0),
    "save_total_limit": Range(1, note="null keeps every checkpoint; transformers reads 0 so too"),
    "seed": Range(0),
    "data_seed": Range(0),
    "dataloader_num_workers": Range(0),
    "dataloader_prefetch_factor": Range(1),
    "eval_accumulation_steps": Range(1),
    "torch_empty_cache_steps": Range(1),
    "ddp_timeout": Range(1),
    "pad_to_multiple_of": Range(1),
    "num_completions_to_print": Range(0),
    "max_tool_calling_iterations": Range(0),
    "ref_model_mixup_alpha": Range(0, 1),
    "ref_model_sync_steps": Range(1),
    "top_entropy_quantile": Range(0, 1),
    "entropy_coef": Range(0),
    "entropy_coef_min": Range(0),
    "entropy_coef_max": Range(0),
    "entropy_coef_delta": Range(0),
    "entropy_target": Range(0),
    "sapo_temperature_neg": Range(0, low_open=True),
    "sapo_temperature_pos": Range(0, low_open=True),
    "vllm_importance_sampling_clip_max": Range(0, low_open=True),
    "vllm_importance_sampling_clip_min": Range(0),
    "vllm_gpu_memory_utilization": Range(0, 1, low_open=True),
    "vllm_tensor_parallel_size": Range(1),
    "vllm_server_port": Range(1, 65535),
    "vllm_group_port": Range(1, 65535),
    "vllm_server_timeout": Range(0, low_open=True),
}

# peft's LoraConfig values it checks only when the model is adapted (a rank of 0 fails after the model loads)
LORA_RANGES: dict[str, Range] = {
    "r": Range(1, note="the adapter rank, e.g. 16"),
    "lora_alpha": Range(0, low_open=True, note="often 2 x r"),
    "lora_dropout": Range(0, 1, high_open=True),
}


def check_fields(values: dict, fields: dict[str, ValueType], ranges: dict[str, Range], prefix: str = "") -> list[str]:
    """The problems of ``values`` (key -> value) against ``fields``' types and ``ranges``;
    keys ``fields`` does not know are left to the caller (it names the closest)."""
    out = []
    for key, value in values.items():
        vtype = fields.get(key)
        if vtype is not None:
            problem = value_problem(f"{prefix}{key}", value, vtype, ranges.get(key))
            if problem:
                out.append(problem)
    return out


__all__ = ["Range", "ValueType", "value_problem", "from_annotation", "section_type", "section_range", "check_fields",
           "RANGES", "LORA_RANGES", "shown"]
