"""`grpo preflight CONFIG`: is there a learning signal before any training?"""

from __future__ import annotations

import json
from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.checks.preflight import format_report, judge_scored, score_groups
from grpo_core.commands import SUMMARIES
from grpo_core.config import models
from grpo_core.config.load import load_config
from grpo_core.data import passrate
from grpo_core.run import rollouts
from grpo_core.run.prepare import check_or_stop, prepare, sampling_settings
from grpo_core.trainer import generation


def add_parser(sub) -> None:
    p = sub.add_parser(
        "preflight",
        help=SUMMARIES["preflight"],
        description="Samples num_generations completions for K prompts exactly as training would "
        "(same chat template, temperature, max_completion_length), scores them with the configured "
        "rewards and reports the share of groups with zero reward spread, per-reward statistics, "
        "answer-extraction failures and truncation. Exits 1 when the signal is dead. Config "
        "overrides (--key value) work as in grpo train.",
    )
    p.add_argument("config", help="the YAML config grpo train would use")
    p.add_argument("--prompts", type=int, default=16, metavar="K", help="prompts to sample (default 16)")
    p.add_argument("--stage", default=None, help="stage whose rewards to check (default: the first)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the report as JSON")
    p.add_argument("--no-check", action="store_true", help="skip grpo check before sampling")
    p.add_argument("--k", type=int, default=None, metavar="K",
                   help="completions per prompt (default: num_generations)")
    p.add_argument("--write", type=Path, default=None, metavar="FILE",
                   help="write the prompts whose pass rate (the correctness reward at its maximum) is inside "
                        "--band as JSONL with a pass_rate column, for dataset: {name: files, params: {path: FILE}}")
    p.add_argument("--band", type=float, nargs=2, default=(0.0, 1.0), metavar=("LOW", "HIGH"),
                   help="pass rates kept by --write, both ends excluded (default 0 1: neither always nor never "
                        "solved)")
    p.add_argument("--verbose", action="store_true", help="keep the libraries' progress bars")
    p.set_defaults(func=run, accepts_extra=True)


def sample_groups(cfg, stage_plan, rows, device: str, log=print, k: int | None = None):
    """Load the configured base model and sample one group per prompt with the
    stage's generation settings (training's, from ``prepare.sampling_settings``)."""

    a = stage_plan.args
    model, tokenizer = models.load(cfg.model.id, dtype=cfg.model.dtype, attn_implementation=cfg.model.attn_implementation,
                            revision=cfg.model.revision, device=device, chat_template=cfg.model.chat_template, log=log)
    model.to(device).eval()
    prompts = [r["prompt"] for r in rows]
    n = k or a.num_generations
    groups = generation.generate(model, tokenizer, prompts, n=n, batch_size=max(1, 64 // n),  # ~64 sequences per call
                      **sampling_settings(cfg, a, device))
    return prompts, groups


def multi_turn_report(prepared, stage, rows, log=print, k: int | None = None):
    """Environments and tools: the rollouts training runs (TRL's, with tool calls and
    results), scored as training scores them, environments' rewards included."""

    cfg, device = prepared.cfg, prepared.device
    model, tokenizer = models.load(cfg.model.id, dtype=cfg.model.dtype, attn_implementation=cfg.model.attn_implementation,
                            revision=cfg.model.revision, device=device, chat_template=cfg.model.chat_template, log=log)
    done = rollouts.sample(prepared, stage, rows, model, tokenizer, k or stage.args.num_generations)
    scored = rollouts.scored(done)
    report = judge_scored(done.names, done.weights, [r["prompt"] for r in rows], scored, rollouts.as_groups(done),
                          stage.args.temperature)
    report.tool_calls = rollouts.mean_tool_calls(done)
    if report.tool_calls == 0:
        report.advice.append("the model called no tool in any completion: check that the system prompt tells it "
                             "about the tools, or start from a model trained for tool use.")
    return report, scored


def run(args) -> int:
    if args.prompts < 1 or (args.k is not None and args.k < 1):
        raise GrpoError(f"--prompts and --k must be at least 1, got {args.prompts} and {args.k}.")
    cfg = load_config(args.config, args.extra)
    p = prepare(cfg, check=False, verbose=args.verbose)
    stage = p.stage(args.stage)
    if not args.no_check:
        check_or_stop(cfg, p.train_ds, [stage], print)
    device, train_ds = p.device, p.train_ds
    seed = stage.args.seed
    sample = train_ds.shuffle(seed=seed).select(range(min(args.prompts, len(train_ds))))
    rows = [sample[i] for i in range(len(sample))]
    k = args.k or stage.args.num_generations
    print(f"preflight: {len(rows)} prompts x {k} completions from "
          f"{cfg.model.id} on {device} (stage '{stage.section.name}') ...", flush=True)
    if cfg.environment is not None:
        report, scored = multi_turn_report(p, stage, rows, k=k)
    else:
        prompts, groups = sample_groups(cfg, stage, rows, device, k=k)
        scored = score_groups(stage.funcs, stage.weights, prompts, rows, groups)
        report = judge_scored([f.__name__ for f in stage.funcs], stage.weights, prompts, scored, groups,
                              stage.args.temperature)
    print(format_report(report))
    _pass_rates(args, stage, rows, scored, k)
    if args.json:
        args.json.write_text(json.dumps(report.as_dict(), indent=2, default=str))
    return report.exit_code


def _pass_rates(args, stage, rows, scored: dict, k: int) -> None:
    """The pass-rate histogram, the predicted flat share, and --write's filtered dataset."""
    from grpo_core.run.heldout import correctness_reward

    reward = correctness_reward(stage.funcs)
    if reward is None:
        if args.write:
            raise GrpoError("--write keeps prompts by pass rate, which needs a correctness reward (one registered "
                            "with correctness=True, e.g. math.correctness) among the stage's rewards.")
        return
    scores = scored["per_reward"][list(stage.funcs).index(reward)]
    top = reward.range[1] if getattr(reward, "range", None) else 1.0
    rates = passrate.pass_rates(scores, k, top)
    print("\n" + "\n".join(passrate.format_lines(rates, k, stage.args.num_generations)))
    if args.write:
        kept = passrate.write(args.write, rows, rates, tuple(args.band))
        print(f"wrote {kept} of {len(rows)} prompts with {args.band[0]:g} < pass rate < {args.band[1]:g} to "
              f"{args.write} (train on them with dataset: {{name: files, params: {{path: {args.write}}}}})")
