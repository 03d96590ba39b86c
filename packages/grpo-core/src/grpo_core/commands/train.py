"""`grpo train CONFIG [--key value ...]`."""

from __future__ import annotations

import argparse
import sys

from grpo_core.commands import SUMMARIES
from grpo_core.config.load import load_config
from grpo_core.config.reference import reference
from grpo_core.run.outputs import check_writable
from grpo_core.run.prepare import prepare
from grpo_core.run.resume import decide
from grpo_core.run.train import run as train
from grpo_core.runfiles.progress import read_progress

EPILOG = """\
overrides:
  --KEY VALUE            any GRPOConfig field (--learning_rate 1e-4 --max_steps 50 --report_to wandb)
  --SECTION.KEY VALUE    grpo's sections (--model.id smollm2-135m --lora.r 8 --dataset.params.level 2)
  --rewards SPEC ...     replace the reward list ('math.correctness:2.0' 'format.xml_soft:0.5')

Command-line values override the YAML and apply to every stage.
"""


def add_parser(sub) -> None:
    p = sub.add_parser(
        "train",
        help=SUMMARIES["train"],
        description="GRPO training with trl.GRPOTrainer: rewards and dataset by name, LoRA or full "
        "fine-tune, health monitor, multi-stage. Outputs: checkpoints, adapter, metrics.jsonl, "
        "rewards.png, the resolved config.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", help="YAML file (see examples/quickstart.yaml)")
    p.add_argument("--help-config", action=_HelpConfig, nargs=0,
                   help="print every grpo setting (type, default, meaning; docs/config.md) and exit")
    p.add_argument(
        "--resume", nargs="?", const=True, default=False, metavar="CHECKPOINT",
        help="continue the run in output_dir from its last checkpoint (or the one given: a path, or a name in "
        "output_dir); a finished run with a larger --max_steps trains on",
    )
    p.add_argument("--overwrite", action="store_true",
                   help="replace an earlier run in output_dir (by default it is moved aside to DIR.1, DIR.2, ...)")
    p.add_argument("--no-check", action="store_true",
                   help="skip grpo check (gold self-test and reward-hacking probes) before training")
    p.add_argument("--dry-run", action="store_true",
                   help="check the config, rewards and dataset (with --resume: against the checkpoint), print the "
                   "resolved config, load no model")
    p.add_argument("--verbose", action="store_true", help="keep the libraries' progress bars")
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)
    p.set_defaults(func=run, accepts_extra=True)


class _HelpConfig(argparse.Action):
    """Like --help: prints the settings reference and exits, no config needed."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(reference(), end="")
        parser.exit()


STRICT_HELP = ("refuse settings TRL removed (warmup_ratio, max_prompt_length, overwrite_output_dir, ...) instead "
               "of reading them as what replaced them")


def run(args) -> int:
    cfg = load_config(args.config, args.extra, strict=args.strict)
    print_notes(cfg)
    if args.dry_run:
        return _dry_run(cfg, check=not args.no_check, verbose=args.verbose, resume=args.resume)

    try:
        result = train(cfg, resume=args.resume, overwrite=args.overwrite, check=not args.no_check,
                       verbose=args.verbose)
    finally:
        _close_process_group()
    return result.exit_code  # 130 Ctrl-C, 143 SIGTERM (checkpoint saved), 1 non-finite stop


def _close_process_group() -> None:
    """Under accelerate launch, close torch.distributed's process group before the process
    exits, as accelerate's ``end_training`` does: left to the interpreter's teardown, a
    gloo process group's threads can abort the process after a finished run (seen once in
    CI: "terminate called without an active exception", exit -6 after the last step)."""
    dist = getattr(sys.modules.get("torch"), "distributed", None)  # torch is loaded by training, if at all
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def print_notes(cfg) -> None:
    """What the config says otherwise than grpo reads it, once (on the main process)."""
    import os

    if os.environ.get("RANK", "0") == "0":
        for note in cfg.notes:
            print(f"note: {note}", file=sys.stderr)


def _dry_run(cfg, check: bool = True, verbose: bool = False, resume: bool | str = False) -> int:
    p = prepare(cfg, check=check, verbose=verbose)
    check_writable(p.root, keep=False)
    resume = resume or p.plans[0].args.resume_from_checkpoint or False
    if resume:  # what --resume would do, or its refusal, as training would say it
        for start in decide(cfg, p.plans, read_progress(p.root), resume, p.train_ds):
            print("\n".join(start.lines) or f"Stage {start.name!r} would start from the beginning.")
    print(f"config OK: device {p.device}, dataset '{cfg.dataset.name}' ({len(p.train_ds)} rows"
          + (f", eval {len(p.eval_ds)}" if p.eval_ds is not None else "") + ")")
    env = cfg.environment
    for stage in p.plans:
        rw = ", ".join([f"{f.__name__}:{w:g}" for f, w in zip(stage.funcs, stage.weights)]
                       + [f"{e.name}:{e.weight:g} (get_reward)" for e in (env.rewarded if env else [])])
        a = stage.args
        print(f"  stage '{stage.section.name}': {a.max_steps} steps, lr {a.learning_rate:g}, "
              f"{a.num_generations} generations x {a.max_completion_length} tokens, rewards {rw}, "
              f"output {stage.output_dir}")
    sys.stdout.flush()
    return 0
