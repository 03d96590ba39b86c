"""The run folder's ``README.md``: what was trained, on what, with which rewards, how, with
what result, and how to load it; grpo's own model card in place of TRL's generic one.

A finished ``grpo train`` writes it (TRL's card, "a fine-tuned version of [None]", is no
longer written); the Hub's metadata header is kept (``base_model``, ``library_name``,
``tags``), so ``push_to_hub`` uploads this card. Held-out accuracy is what the run measured
while training (``eval/accuracy`` in ``metrics.jsonl``); ``grpo eval`` on the run's final
weights adds its base -> trained figures (:func:`record_eval`), from ``eval.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from grpo_core.runfiles import METRICS, RESOLVED
from grpo_core.runfiles.jsonl import read_jsonl

NAME = "README.md"
MARK = "<!-- grpo model card: written by grpo train (grpo_core/run/model_card.py) -->"
EVAL_BEGIN, EVAL_END = "<!-- grpo eval -->", "<!-- /grpo eval -->"
WEIGHTS = ("adapter", "model", "merged")  # the final weights' folders, where grpo eval writes eval.json


def code(text) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    text = " ".join(str(text).split())
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def write(root: Path, prepared, steps: int, log=print) -> Path | None:
    """``root/README.md`` for the finished run ``prepared`` (``grpo_core.run.prepare.Prepared``)
    of ``steps`` steps in all; a failure is a warning (the trained weights are saved already)."""
    cfg = prepared.cfg
    try:
        parts = [_header(cfg), MARK, *_summary(prepared, steps), *_data(cfg), *_rewards(prepared),
                 *_training(prepared, steps), *_results(root, prepared), *_use(root, cfg)]
        path = Path(root) / NAME
        path.write_text("\n".join(parts).rstrip() + "\n")
    except Exception as exc:  # noqa: BLE001 - the card must never cost the trained model
        log(f"warning: could not write {NAME}: {type(exc).__name__}: {exc}")
        return None
    return path


def _header(cfg) -> str:
    import yaml

    meta = {}
    if not Path(str(cfg.model.id)).expanduser().exists():  # a Hub id, not a local folder
        meta["base_model"] = cfg.model.id
    meta["library_name"] = "peft" if cfg.lora is not None else "transformers"
    meta["pipeline_tag"] = "text-generation"
    meta["tags"] = ["grpo", "trl", *(["lora"] if cfg.lora is not None else [])]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n"


def _summary(prepared, steps: int) -> list[str]:
    cfg, last = prepared.cfg, prepared.plans[-1]
    rewards = ", ".join(code(f.__name__) for f in last.funcs)
    kind = "A LoRA adapter on" if cfg.lora is not None else "A full fine-tune of"
    return [f"# {prepared.root.name}\n",
            f"{kind} {code(cfg.model.id)}, trained with GRPO (`grpo train`, on "
            f"[TRL](https://github.com/huggingface/trl)'s `GRPOTrainer`) for {steps} steps on the {code(cfg.dataset.name)} dataset, rewarded by "
            f"{rewards}.\n"]


def _data(cfg) -> list[str]:
    d = cfg.dataset
    out = ["## Data\n", f"- dataset: {code(d.name)} (a grpo dataset adapter: `grpo datasets show {d.name}`)",
           f"- training split: {code(d.split)}"]
    if d.params:
        out.append(f"- parameters: {code(json.dumps(d.params, default=str))}")
    if d.eval_split or d.eval_params:
        out.append(f"- held-out split: {code(d.eval_split or 'test')}"
                   + (f", parameters {code(json.dumps(d.eval_params, default=str))}" if d.eval_params else ""))
    if d.system_prompt:
        out.append(f"- system prompt: {code(d.system_prompt)}")
    if d.few_shot:
        shots = d.few_shot if isinstance(d.few_shot, int) else len(d.few_shot)
        out.append(f"- few-shot examples before each question: {shots}")
    return [*out, ""]


def _rewards(prepared) -> list[str]:
    out = ["## Rewards\n"]
    for plan in prepared.plans:
        if prepared.cfg.multi_stage:
            out.append(f"Stage {code(plan.section.name)}:\n")
        for spec, func in zip(plan.section.rewards, plan.funcs):
            notes = [f"parameters {code(json.dumps(spec.params, default=str))}"] if spec.params else []
            notes += [f"when {code(spec.when)}"] if spec.when is not None else []
            if getattr(func, "correctness", False):
                notes.append("correctness: held-out accuracy is its share of full marks")
            out.append(f"- {code(func.__name__)}, weight {spec.weight:g}" + "".join(f"; {n}" for n in notes))
        out.append("")
    return out


def _training(prepared, steps: int) -> list[str]:
    cfg = prepared.cfg
    out = ["## Training\n", f"- learning method: {code(cfg.learning.method)}"
           + (" (TRL's GRPO advantages)" if cfg.learning.method == "grpo" else ""),
           f"- steps: {steps}" + (f" in {len(prepared.plans)} stages" if cfg.multi_stage else "")]
    for plan in prepared.plans:
        a = plan.args
        where = f" (stage {code(plan.section.name)})" if cfg.multi_stage else ""
        out.append(f"- settings{where}: max_steps {a.max_steps}, learning_rate {a.learning_rate:g} "
                   f"({getattr(a.lr_scheduler_type, 'value', a.lr_scheduler_type)}), per_device_train_batch_size "
                   f"{a.per_device_train_batch_size}, gradient_accumulation_steps {a.gradient_accumulation_steps}, "
                   f"num_generations {a.num_generations}, max_completion_length {a.max_completion_length}, "
                   f"temperature {a.temperature:g}, beta {a.beta:g}, seed {a.seed}")
    if cfg.lora is not None:
        lora = {k: cfg.lora[k] for k in ("r", "lora_alpha", "lora_dropout", "target_modules") if k in cfg.lora}
        out.append("- LoRA: " + ", ".join(f"{k} {v}" for k, v in lora.items()))
    else:
        out.append("- full fine-tuning (no LoRA)")
    out.append(f"- device: {prepared.device}; the whole configuration, re-runnable: `config.yaml`")
    return [*out, ""]


def _results(root: Path, prepared) -> list[str]:
    out = ["## Results\n"]
    steps = [r for r in read_jsonl(Path(root) / METRICS) if "reward" in r]
    held = [(r["step"], r["eval/accuracy"]) for r in steps if isinstance(r.get("eval/accuracy"), (int, float))]
    if held:
        (s0, a0), (s1, a1) = held[0], held[-1]
        n = len(prepared.heldout) if prepared.heldout else prepared.cfg.heldout.prompts
        out.append(f"Held-out accuracy while training (greedy answers to {n} prompts of the "
                   f"{code(prepared.cfg.dataset.eval_split or 'test')} split, measured {len(held)} times): "
                   f"**{a0:.3f}** after step {s0} -> **{a1:.3f}** after step {s1}.\n")
    else:
        out.append("Held-out accuracy was not measured while training (no held-out split or no correctness "
                   "reward).\n")
    if steps:
        out.append(f"Mean training reward (total): {steps[0]['reward']:.3f} at step {steps[0]['step']} -> "
                   f"{steps[-1]['reward']:.3f} at step {steps[-1]['step']}.\n")
    report = next((json.loads(p.read_text()) for p in (Path(root) / w / "eval.json" for w in WEIGHTS) if p.is_file()),
                  None)
    return [*out, *_eval_section(report, Path(root).resolve() / RESOLVED), ""]


def _eval_section(report: dict | None, config: Path | None = None) -> list[str]:
    """What ``grpo eval`` measured on the final weights (its ``eval.json``), between markers."""
    if report is None:
        return [EVAL_BEGIN, "The base model against the trained one on the same held-out prompts: "
                f"`grpo eval {config}` (it writes its figures here).", EVAL_END]
    base, trained = report.get("base") or {}, report.get("trained") or {}
    how = "greedy" if report.get("greedy") else f"{report.get('samples')} samples each"
    lines = [EVAL_BEGIN, f"`grpo eval` on {report.get('prompts')} prompts of the {code(report.get('split'))} split "
             f"({how}), base model -> trained:\n"]
    for key, label in (("accuracy", "accuracy"), ("format_compliance", "format compliance"),
                       ("reward_total", "mean total reward")):
        if isinstance(trained.get(key), (int, float)):
            was = f"{base[key]:.3f}" if isinstance(base.get(key), (int, float)) else "not measured"
            lines.append(f"- {label}: {was} -> **{trained[key]:.3f}**")
    return [*lines, EVAL_END]


def _use(root: Path, cfg) -> list[str]:
    root = Path(root).resolve()
    if cfg.lora is not None:
        load = ("from peft import AutoPeftModelForCausalLM\nfrom transformers import AutoTokenizer\n\n"
                f"model = AutoPeftModelForCausalLM.from_pretrained({str(root / 'adapter')!r})\n"
                f"tokenizer = AutoTokenizer.from_pretrained({str(root / 'adapter')!r})")
        merged = ("\n\nThe adapter merged into the base model, loadable without peft, is in `merged/` "
                  "(`AutoModelForCausalLM.from_pretrained`)." if cfg.merge else
                  "\n\n`grpo merge` (or `lora.merge: true`) writes it merged into the base model.")
    else:
        load = ("from transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
                f"model = AutoModelForCausalLM.from_pretrained({str(root / 'model')!r})\n"
                f"tokenizer = AutoTokenizer.from_pretrained({str(root / 'model')!r})")
        merged = ""
    return ["## Use it\n", "```python", load, "```" + merged,
            "\nIn this folder: `metrics.jsonl` (every step's figures), `rollouts/` (every completion with its rewards), "
            f"`rewards.png`; `grpo view {root}` shows them in a browser."]


def record_eval(weights: Path, report: dict) -> Path | None:
    """After ``grpo eval`` of a run's final weights (``weights``: its ``adapter/``, ``model/``
    or ``merged/``): its figures in the run's card, if grpo wrote one; else nothing."""
    weights = Path(weights).resolve()
    card = weights.parent / NAME
    if weights.name not in WEIGHTS or not card.is_file():
        return None
    text = card.read_text()
    if MARK not in text or EVAL_BEGIN not in text or EVAL_END not in text:
        return None
    head, rest = text.split(EVAL_BEGIN, 1)
    card.write_text(head + "\n".join(_eval_section(report)) + rest.split(EVAL_END, 1)[1])
    return card


__all__ = ["write", "record_eval", "code", "NAME", "MARK"]
