"""Batch shapes TRL's GRPOConfig refuses, found with the config's other problems before any
model loads: each with the nearest values that fit on the processes at hand and the process
counts that fit (an open-r1 recipe against the launches it was written for)."""

from __future__ import annotations

import os
from typing import Any

from grpo_core.config.schema import RunConfig, StageSection

# GRPOConfig's defaults (TRL 1.16) for the values that shape a batch; a test holds them to TRL's
SHAPE_DEFAULTS: dict[str, Any] = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "num_generations": 8,
                  "num_generations_eval": None, "per_device_eval_batch_size": 8, "eval_strategy": "no",
                  "generation_batch_size": None, "steps_per_generation": None}


_OPTIONAL = ("num_generations_eval", "generation_batch_size", "steps_per_generation")


def process_count() -> int:
    """The processes of this run: accelerate launch and torchrun set WORLD_SIZE; 1 without them."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def shape_values(*sources: dict) -> dict | None:
    """The batch-shape values of ``sources`` (later ones win) over GRPOConfig's defaults;
    None when one is not a whole number (check_values reports that one)."""
    values = dict(SHAPE_DEFAULTS)
    for source in sources:
        values.update({k: v for k, v in source.items() if k in values})
    if str(getattr(values["eval_strategy"], "value", values["eval_strategy"])) not in ("no", "steps", "epoch"):
        return None
    whole = [k for k in values if k != "eval_strategy" and not (k in _OPTIONAL and values[k] is None)]
    return values if all(_whole(values[k]) for k in whole) and values["num_generations"] >= 2 else None


def generation_batch(v: dict, procs: int) -> tuple[int, int]:
    """(generation_batch_size, steps_per_generation) as TRL derives them (the latter 0 when
    an explicit generation_batch_size is no multiple of the global batch)."""
    per_step = v["per_device_train_batch_size"] * procs
    if v["generation_batch_size"] is None:
        steps = v["steps_per_generation"] or v["gradient_accumulation_steps"]
        return per_step * steps, steps
    size = v["generation_batch_size"]
    return size, size // per_step if size % per_step == 0 else 0


def shape_faults(v: dict, procs: int, dynamic: bool = False) -> list[str]:
    """The rules of TRL 1.16's GRPOConfig.__post_init__ on the batch shape that ``v`` breaks on
    ``procs`` processes, in TRL's order ("both", "global", "eval", "groups"), and grpo's
    sampling.dynamic rule ("dynamic": each process's generation batch holds whole groups)."""
    if v["generation_batch_size"] is not None and v["steps_per_generation"] is not None:
        return ["both"]
    size, steps = generation_batch(v, procs)
    g = v["num_generations"]
    faults = []
    if not steps:
        faults.append("global")
    if str(getattr(v["eval_strategy"], "value", v["eval_strategy"])) != "no" and \
            (v["per_device_eval_batch_size"] * procs) % (v["num_generations_eval"] or g):
        faults.append("eval")
    if size % g:
        faults.append("groups")
    if dynamic and steps and (v["per_device_train_batch_size"] * steps) % g:
        faults.append("dynamic")
    return faults


def _processes(n: int) -> str:
    return f"{n} process" + ("" if n == 1 else "es")


def _generation_text(v: dict, procs: int) -> str:
    """What the generation batch of ``v`` is made of."""
    if v["generation_batch_size"] is not None:
        return "as set"
    steps = "steps_per_generation" if v["steps_per_generation"] is not None else "gradient_accumulation_steps"
    return (f"per_device_train_batch_size {v['per_device_train_batch_size']} x {_processes(procs)} x {steps} "
            f"{generation_batch(v, procs)[1]}")


def _fault_text(fault: str, v: dict, procs: int) -> str:
    """TRL's rule that ``v`` breaks on ``procs`` processes, with the values it is made of."""
    size, steps = generation_batch(v, procs)
    g, b = v["num_generations"], v["per_device_train_batch_size"]
    if fault == "both":
        return ("generation_batch_size and steps_per_generation are both set; TRL takes one of them "
                "(generation_batch_size = per_device_train_batch_size x processes x steps_per_generation): drop one.")
    if fault == "global":
        return (f"generation_batch_size {size} must be divisible by the global batch size {b * procs} "
                f"(per_device_train_batch_size {b} x {_processes(procs)}).")
    if fault == "eval":
        n, name = (v["num_generations_eval"], "num_generations_eval") if v["num_generations_eval"] else (g, "num_generations")
        return (f"the global eval batch size {v['per_device_eval_batch_size'] * procs} (per_device_eval_batch_size "
                f"{v['per_device_eval_batch_size']} x {_processes(procs)}) must be divisible by {name} {n} "
                f"(evaluation samples whole groups).")
    if fault == "groups":
        return (f"generation_batch_size {size} ({_generation_text(v, procs)}) must be divisible by num_generations "
                f"{g} (TRL samples whole groups of {g} completions, one group per prompt).")
    return (f"sampling.dynamic needs each process's generation batch (per_device_train_batch_size {b} x "
            f"steps_per_generation {steps} = {b * steps}) to hold whole groups of num_generations {g}.")


def _state(fault: str, v: dict, procs: int) -> str:
    """The batch a rule divides, and how many whole groups it holds (if it does)."""
    size, steps = generation_batch(v, procs)
    g = v["num_generations"]
    if fault == "eval":
        size, g = v["per_device_eval_batch_size"] * procs, v["num_generations_eval"] or g
        what = "eval batch"
    elif fault == "dynamic":
        size, what = v["per_device_train_batch_size"] * steps, "per-process generation batch"
    else:
        what = "generation batch"
    return f"{what} {size}" + (f" = {size // g} group{'s' * (size // g > 1)} of {g}" if size % g == 0 else "")


def _knobs(fault: str, v: dict) -> tuple[str, ...]:
    """The values whose change can mend ``fault``, most direct first."""
    steps = next((k for k in ("steps_per_generation", "generation_batch_size") if v[k] is not None),
                 "gradient_accumulation_steps")
    return {"groups": ("num_generations", "per_device_train_batch_size", steps),
            "global": ("generation_batch_size", "per_device_train_batch_size"),
            "eval": ("per_device_eval_batch_size", "num_generations_eval"),
            "dynamic": ("per_device_train_batch_size", steps, "num_generations")}.get(fault, ())


def _nearest(fault: str, v: dict, name: str, procs: int, dynamic: bool) -> int | None:
    """The value of ``name`` nearest its own (the smaller on a tie) with which the shape fits;
    None if none does (another rule broken beside ``fault`` needs another change)."""
    current = v[name] if v[name] is not None else (
        v["num_generations"] if name == "num_generations_eval" else generation_batch(v, procs)[0])
    low = 2 if name.startswith("num_generations") else 1
    fits = [n for n in range(low, 4 * max(current, 16) + 1)
            if n != current and not shape_faults({**v, name: n}, procs, dynamic)]
    return min(fits, key=lambda n: (abs(n - current), n)) if fits else None


def _launches(fault: str, v: dict, procs: int, dynamic: bool, launch: tuple | None) -> str:
    """Where else ``v`` fits as it is: the process counts a recipe was written for (``launch``:
    (who, ((processes, how), ...)), e.g. open-r1's), or the nearest count that fits."""
    fit = [p for p in range(1, 257) if p != procs and not shape_faults(v, p, dynamic)]
    if launch:
        who, counts = launch
        parts = [f"{p} processes ({how}) " + ("fit as they are" if p in fit else "do not") + f": {_state(fault, v, p)}"
                 for p, how in counts]
        text = f" As {who} launches its recipes, " + "; ".join(parts) + "."
        if any(p in fit for p, _ in counts) or not fit:
            return text
        return text + f" It fits on {fit[0]} processes: {_state(fault, v, fit[0])}."
    if not fit:
        return ""
    nearest = min(fit, key=lambda p: (abs(p - procs), p))
    return f" Or run on {nearest} processes (accelerate launch --num_processes {nearest}): {_state(fault, v, nearest)}."


def shape_problem(fault: str, v: dict, procs: int, dynamic: bool = False, launch: tuple | None = None) -> str:
    """``fault`` of ``v`` on ``procs`` processes, with the values that fit: each of the knobs
    changed alone, and the process counts (the recipe's, if it was written for some)."""
    text = _fault_text(fault, v, procs)
    if fault == "both":
        return text
    fits = []
    for name in _knobs(fault, v):
        value = _nearest(fault, v, name, procs, dynamic)
        if value is not None:
            fits.append(f"{name} {value} ({_state(fault, {**v, name: value}, procs)})")
    if fits:
        text += f" Values that fit on {_processes(procs)}: " + ", or ".join(fits) + "."
    else:
        text += f" No one of {', '.join(_knobs(fault, v))} fits alone on {_processes(procs)}: change two of them."
    return text + _launches(fault, v, procs, dynamic, launch)


def check_batch_shape(sources: list[tuple[str, list[dict]]], problems, *, procs: int | None = None,
                      dynamic: bool = False, launch: tuple | None = None) -> None:
    """Each batch-shape rule TRL's GRPOConfig (and grpo's sampling.dynamic) would refuse,
    for each ``(where, [values, ...])`` (a stage's prefix and its values, later ones winning),
    added to ``problems`` with the values that fit, before any model loads."""
    procs = procs or process_count()
    for where, layers in sources:
        values = shape_values(*layers)
        if values is None:
            continue
        for fault in shape_faults(values, procs, dynamic):
            problems.add(where + shape_problem(fault, values, procs, dynamic, launch))


def check_config_shape(cfg: RunConfig, problems, launch: tuple | None = None) -> None:
    """:func:`check_batch_shape` on each stage of ``cfg`` (the YAML's values, the stage's,
    the command line's), on the processes at hand; ``launch``: the ones its recipe was written for."""
    stages = cfg.stages or [StageSection("main", [], {})]
    sources = [(f"stage '{st.name}': " if set(st.training) & set(SHAPE_DEFAULTS) else "",
                [cfg.training, st.training, cfg.cli]) for st in stages]
    check_batch_shape(sources, problems, dynamic=bool(cfg.sampling.dynamic), launch=launch)
