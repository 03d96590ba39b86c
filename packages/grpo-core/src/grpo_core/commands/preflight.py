"""`grpo preflight CONFIG`: is there a learning signal before any training?"""

from __future__ import annotations

import json
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser(
        "preflight",
        help="sample from the base model, score, and report whether the rewards give a learning signal",
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
    p.add_argument("--verbose", action="store_true", help="keep the libraries' progress bars")
    p.set_defaults(func=run, accepts_extra=True)


def sample_groups(cfg, stage_plan, rows, device: str, log=print):
    """Load the configured base model and sample one group per prompt with the
    stage's generation settings (training's, from ``prepare.sampling_settings``)."""
    from ..generation import generate
    from ..models import load
    from ..prepare import sampling_settings

    a = stage_plan.args
    model, tokenizer = load(cfg.model.id, dtype=cfg.model.dtype, attn_implementation=cfg.model.attn_implementation,
                            revision=cfg.model.revision, device=device, log=log)
    model.to(device).eval()
    prompts = [r["prompt"] for r in rows]
    groups = generate(model, tokenizer, prompts, n=a.num_generations,
                      batch_size=max(1, 64 // max(a.num_generations, 1)),  # ~64 sequences per generate call
                      **sampling_settings(cfg, a, device))
    return prompts, groups


def multi_turn_report(cfg, stage, rows, device: str, log=print):
    """Environments and tools: the rollouts training runs (TRL's, with tool calls and
    results), scored as training scores them, environments' rewards included."""
    from .. import rollouts
    from ..models import load
    from ..preflight import judge_scored

    model, tokenizer = load(cfg.model.id, dtype=cfg.model.dtype, attn_implementation=cfg.model.attn_implementation,
                            revision=cfg.model.revision, device=device, log=log)
    done = rollouts.sample(cfg, stage, rows, model, tokenizer, device, stage.args.num_generations)
    report = judge_scored(done.names, done.weights, [r["prompt"] for r in rows], rollouts.scored(done),
                          rollouts.as_groups(done), stage.args.temperature)
    report.tool_calls = rollouts.mean_tool_calls(done)
    if report.tool_calls == 0:
        report.advice.append("the model called no tool in any completion: check that the system prompt tells it "
                             "about the tools, or start from a model trained for tool use.")
    return report


def run(args) -> int:
    from ..config import load_config
    from ..errors import GrpoError
    from ..preflight import analyze, format_report
    from ..prepare import check_or_stop, prepare

    if args.prompts < 1:
        raise GrpoError(f"--prompts must be at least 1, got {args.prompts}.")
    cfg = load_config(args.config, args.extra)
    p = prepare(cfg, check=False, verbose=args.verbose)
    stage = p.stage(args.stage)
    if not args.no_check:
        check_or_stop(cfg, p.train_ds, [stage], print)
    device, train_ds = p.device, p.train_ds
    seed = stage.args.seed
    sample = train_ds.shuffle(seed=seed).select(range(min(args.prompts, len(train_ds))))
    rows = [sample[i] for i in range(len(sample))]
    print(f"preflight: {len(rows)} prompts x {stage.args.num_generations} completions from "
          f"{cfg.model.id} on {device} (stage '{stage.section.name}') ...", flush=True)
    if cfg.environment is not None:
        report = multi_turn_report(cfg, stage, rows, device)
    else:
        prompts, groups = sample_groups(cfg, stage, rows, device)
        report = analyze(stage.funcs, stage.weights, prompts, rows, groups,
                         stage.args.max_completion_length, stage.args.temperature)
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report.as_dict(), indent=2, default=str))
    return report.exit_code
