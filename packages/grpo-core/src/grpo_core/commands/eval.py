"""`grpo eval CONFIG [--checkpoint DIR]`: the base model and the trained one on the same
held-out prompts, scored by the configured rewards, side by side. Without
``--checkpoint``, the finished run in the config's output_dir is the trained one."""

from __future__ import annotations

import json
import math
from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.checks import manifest
from grpo_core.commands import SUMMARIES, clip, number, table
from grpo_core.config import models
from grpo_core.config.grpo_args import default_output_dir
from grpo_core.config.load import load_config
from grpo_core.rewards.scoring import RewardStats, score_batch
from grpo_core.run import model_card, rollouts
from grpo_core.run.prepare import prepare, sampling_settings
from grpo_core.runfiles.progress import finished, last_checkpoint
from grpo_core.runfiles.rollouts import finite_or_none, prompt_text
from grpo_core.trainer import generation
from grpo_core.trainer.generation import (
    adapter_base,
    check_matches_base,
    is_adapter_dir,
    load_policy,
    run_weights,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "eval",
        help=SUMMARIES["eval"],
    )
    p.add_argument("config", help="the YAML config the checkpoint was trained with")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="adapter or full checkpoint (a grpo train output dir or a checkpoint-N folder; "
                        "default: the finished run in the config's output_dir)")
    p.add_argument("--split", default=None, help="held-out split (default: dataset.eval_split, else 'test')")
    p.add_argument("--limit", type=int, default=64, help="prompts to evaluate (default 64)")
    p.add_argument("--samples", type=int, default=1,
                   help="completions per prompt; 1 = greedy (default), more = sampled at the config's temperature")
    p.add_argument("--output", type=Path, default=None, help="JSON report (default: CHECKPOINT/eval.json)")
    p.add_argument("--no-base", dest="base", action="store_false",
                   help="skip the base model (its figures are null): when it was measured already, "
                        "e.g. comparing many checkpoints of one config on the same prompts")
    p.add_argument("--verbose", action="store_true", help="keep the libraries' progress bars")
    p.set_defaults(func=run, accepts_extra=True)


def _summary(funcs, per_reward, totals, groups, names: list[str] | None = None) -> dict:
    """``names``: the reward columns when they are more than ``funcs`` (an environment's
    get_reward comes after them)."""
    from grpo_core.run.heldout import accuracy, correctness_reward, full_marks

    flat = [c for g in groups for c in g]
    out: dict[str, float | None] = {"n": len(flat), "reward_total": _mean(totals),
           "mean_tokens": _mean([c.num_tokens for c in flat]),
           "truncated": _mean([float(c.truncated) for c in flat])}
    names = names or [f.__name__ for f in funcs]
    for name, values in zip(names, per_reward):
        out[name] = _mean(values)
    reward = correctness_reward(funcs)  # declared, not guessed
    acc = list(funcs).index(reward) if reward is not None else None
    fmt = next((i for i, n in enumerate(names) if n.startswith("format.")), None)
    # the figure held-out accuracy logs while training (grpo_core.run.heldout): full marks of the declared range
    out["accuracy"] = accuracy(per_reward[acc], full_marks(funcs[acc])) if acc is not None else None
    out["format_compliance"] = _share_full(per_reward[fmt]) if fmt is not None else None
    return out


def _mean(values) -> float:
    stats = RewardStats("")
    stats.add(values)
    return stats.mean


def _share_full(values) -> float:
    """Share of completions with the reward's full score (1.0)."""
    vals = [v for v in values if v is not None]
    return sum(float(v) >= 1.0 - 1e-9 for v in vals) / len(vals) if vals else math.nan


def _check_checkpoint(checkpoint: Path, base_id: str) -> None:
    if not checkpoint.is_dir():
        raise GrpoError(f"--checkpoint {checkpoint} is not a directory.")
    base_path = models.resolve(base_id)
    if is_adapter_dir(checkpoint):
        trained_on = adapter_base(checkpoint)
        same = trained_on == base_id or Path(trained_on).expanduser().resolve() == Path(base_path).expanduser().resolve()
        if not same:
            raise GrpoError(
                f"adapter {checkpoint} was trained on {trained_on}, but the config's model.id is {base_id} "
                f"({base_path}); evaluate it with the config it was trained with, or --model.id {trained_on}."
            )
    elif (checkpoint / "config.json").is_file():
        check_matches_base(checkpoint, base_path)
    elif (last := _stopped_run_checkpoint(checkpoint)) is not None:  # a run that stopped before its final save
        raise GrpoError(
            f"--checkpoint {checkpoint} is a grpo train run that did not finish (no adapter/ or model/); its last "
            f"checkpoint is {last}: evaluate that (--checkpoint {last}), or finish the run first "
            f"(grpo train CONFIG --resume)."
        )
    else:
        raise GrpoError(
            f"--checkpoint {checkpoint} holds neither an adapter (adapter_config.json) nor a model "
            f"(config.json); point at a grpo train output directory or a checkpoint-N folder."
        )


def _stopped_run_checkpoint(root: Path) -> Path | None:
    """The last checkpoint a run that stopped before its final save wrote: in its folder
    or, for a staged run, in a stage's folder (the one written last)."""
    found = [c for c in (last_checkpoint(d) for d in (root, *sorted(p for p in root.iterdir() if p.is_dir())))
             if c is not None]
    return max(found, key=lambda c: (c / "trainer_state.json").stat().st_mtime, default=None)


def _finished_run(cfg) -> Path:
    """The weights of the finished run in the config's output_dir (no ``--checkpoint``),
    said; else an error naming the directory and the fix."""
    root = Path(cfg.value(cfg.stages[0], "output_dir") or default_output_dir(cfg))
    steps, unfinished = finished(root, [s.name for s in cfg.stages])
    weights = run_weights(root)
    if unfinished is None and weights == root:
        unfinished = "its final weights (adapter/ or model/) are missing"
    if unfinished is not None:
        raise GrpoError(
            f"grpo eval without --checkpoint evaluates the finished run in the config's output_dir, {root}, "
            f"but it holds none ({unfinished}). Train it (grpo train {cfg.path or 'CONFIG'}; --resume finishes "
            f"one that stopped), or name the weights: --checkpoint DIR (a grpo train output dir, its adapter/ or "
            f"a checkpoint-N folder); --output_dir DIR names another run of this config.")
    print(f"eval: the trained model is {weights} (the finished run in the config's output_dir, {steps} steps)",
          flush=True)
    return weights


def _say_manifest(checkpoint: Path, cfg) -> None:
    """The run's rewards against the installed ones (grpo_core.checks.manifest): say what differs."""

    root = manifest.run_dir_of(checkpoint)
    data = manifest.read(root) if root is not None else None
    for line in manifest.compare(data, manifest.build(cfg)) if data else ():
        print(f"note: {line}", flush=True)


def eval_sampling(cfg, stage_args, device: str, samples: int) -> dict:
    """Training's sampling settings; greedy when one completion per prompt."""

    settings = sampling_settings(cfg, stage_args, device)
    return {**settings, "do_sample": samples > 1}


def run(args) -> int:
    cfg = load_config(args.config, args.extra)
    base_id = cfg.model.id
    assert base_id is not None  # (load_config requires it)
    if args.samples < 1 or args.limit < 1:
        raise GrpoError("--samples and --limit must be at least 1.")
    if args.checkpoint is None:
        args.checkpoint = _finished_run(cfg)
    args.checkpoint = run_weights(args.checkpoint)  # a grpo train output dir: the weights it saved
    _check_checkpoint(args.checkpoint, base_id)
    split = args.split or cfg.dataset.eval_split or "test"
    p = prepare(cfg, check=False, eval_split=split, verbose=args.verbose)  # held-out prompts as training prompts them
    device, ds = p.device, p.eval_ds.select(range(min(args.limit, len(p.eval_ds))))
    stage = p.plans[-1]  # the final objective
    _say_manifest(args.checkpoint, cfg)
    rows = [ds[i] for i in range(len(ds))]
    prompts = [r["prompt"] for r in rows]
    sampling = eval_sampling(cfg, stage.args, device, args.samples)
    results, written = {}, {}
    targets = [("base", base_id)] if args.base else []
    for label, target in targets + [("trained", str(args.checkpoint))]:
        print(f"eval: generating with the {label} model ({target}) on {len(rows)} '{split}' prompts ...", flush=True)
        model, tok = load_policy(target, base=base_id if label == "trained" else None,
                                 dtype=cfg.model.dtype, device=device, chat_template=cfg.model.chat_template)
        if cfg.environment is not None:
            results[label], written[label] = _multi_turn(p, stage, rows, model, tok, args.samples)
            continue
        groups = generation.generate(model, tok, prompts, n=args.samples, **sampling)
        del model
        scored = score_batch(stage.funcs, stage.weights, [c.text for g in groups for c in g],
                             [r for r in rows for _ in range(args.samples)],
                             [p for p in prompts for _ in range(args.samples)])
        results[label] = _summary(stage.funcs, scored.per_reward, scored.totals, groups)
        written[label] = _written([f.__name__ for f in stage.funcs], scored.per_reward, groups)
    _report(args, split, rows, sampling["do_sample"], base_id, results, written)
    _say_misses(stage.funcs, rows, written["trained"])
    return 0


def _say_misses(funcs, rows: list, written: list[list[dict]], shown: int = 3) -> None:
    """The trained model's first misses on the declared correctness reward, on the
    console: a right answer scored wrong (an extraction bug) shows here first."""
    from grpo_core.run.heldout import correctness_reward, full_marks

    reward = correctness_reward(funcs)
    if reward is None:
        return
    name, top = reward.__name__, full_marks(reward)
    scored = [(row, c) for row, done in zip(rows, written) for c in done if c["rewards"].get(name) is not None]
    misses = [(row, c) for row, c in scored if c["rewards"][name] < top - 1e-9]
    if not misses:
        return
    print(f"the trained model missed full marks on {name} in {len(misses)} of {len(scored)} scored completions; "
          f"the first {min(shown, len(misses))} (all in the report's 'completions'):")
    for row, c in misses[:shown]:
        answer = f" (answer {clip(row['answer'], 100)!r})" if row.get("answer") is not None else ""
        print(f"  {clip(prompt_text(row.get('prompt')), 100)!r}{answer} -> {clip(c['text'], 100)!r}")


def _multi_turn(prepared, stage, rows, model, tokenizer, samples: int) -> tuple[dict, list]:
    """Environments and tools: training's rollouts (tool calls, results, turns), greedy
    for one sample; TRL's scores, environments' rewards included."""

    done = rollouts.sample(prepared, stage, rows, model, tokenizer, samples, greedy=samples == 1)
    groups = rollouts.as_groups(done)
    out = _summary(stage.funcs, done.per_reward, done.totals, groups, names=done.names)
    out["tool_calls"] = rollouts.mean_tool_calls(done)
    return out, _written(done.names, done.per_reward, groups)


def _written(names: list[str], per_reward: list[list], groups: list[list]) -> list[list[dict]]:
    """What the model wrote for each prompt (one list per prompt, ``--samples`` long),
    each completion with its tokens and its score from every reward (a float; null where
    the reward gave none or a non-finite value: eval.json stays valid JSON)."""

    scores = iter([{name: finite_or_none(v) for name, v in zip(names, column)} for column in zip(*per_reward)])
    return [[{"text": c.text, "tokens": int(c.num_tokens), "truncated": bool(c.truncated), "rewards": next(scores, {})}
             for c in group] for group in groups]


def _per_prompt(rows: list, written: dict) -> list[dict]:
    """eval.json's ``completions``: each held-out prompt (its last user message), its
    answer column when it has one, and what each model measured wrote for it."""

    out = []
    for i, row in enumerate(rows):
        item = {"prompt": prompt_text(row.get("prompt"))}
        if row.get("answer") is not None:
            item["answer"] = str(row["answer"])
        item.update({label: done[i] for label, done in written.items()})
        out.append(item)
    return out


def _report(args, split: str, rows: list, sampled: bool, base_model: str, results: dict, written: dict) -> None:
    trained = results["trained"]
    base = results.get("base") or dict.fromkeys(trained)  # --no-base: null figures
    delta = {k: (trained[k] - base[k]) if isinstance(base[k], float) and isinstance(trained[k], float) else None
             for k in base}
    report = {"split": split, "prompts": len(rows), "samples": args.samples, "greedy": not sampled,
              "checkpoint": str(args.checkpoint), "base_model": base_model,
              "base": base, "trained": trained, "delta": delta, "completions": _per_prompt(rows, written)}
    keys = [k for k in base if k != "n"]
    print(table([[k, _fmt(base[k]), _fmt(trained[k]), _fmt(delta[k], signed=True)] for k in keys],
                ["metric", "base", "trained", "delta"]))
    out = args.output or args.checkpoint / "eval.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"report written to {out} (with what each model wrote for every prompt: 'completions')")
    card = model_card.record_eval(args.checkpoint, report)  # the run's final weights: their figures in its card
    if card is not None:
        print(f"and added to the run's model card, {card}")


def _fmt(v, signed: bool = False) -> str:
    return number(v, signed=signed)
