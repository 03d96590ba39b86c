"""Does a grpo run teach more per generated token than bare TRL?

The same small run three ways, side by side, for each seed:

- ``bare``: a bare ``trl.GRPOTrainer`` script with the quickstart's model, data,
  reward functions (resolved by name, the same functions) and GRPOConfig;
- ``grpo``: ``grpo train`` on the same config;
- ``dynamic``: ``grpo train`` with dynamic sampling (``sampling.dynamic``).

Each trains until it has generated the same number of completion tokens (the
budget; dynamic sampling's dropped groups count), with a constant learning rate
after warm-up so that stopping at the budget is fair to all three. Held-out
accuracy is measured as ``grpo eval`` measures it (the same 64 test prompts,
greedy, math.correctness at full marks) before and after. Printed per
configuration: held-out accuracy, the flat share of what was trained, tokens
generated, steps, wall time, and the ratios against bare TRL (the step time of
``grpo`` against ``bare`` among them: the overhead of grpo's own work per step).

    python bench/learning.py                      # seeds 0-2, the quickstart's model (minutes per run)
    python bench/learning.py --quick              # a tiny random model, 2 steps: a smoke test
    python bench/learning.py --config examples/quickstart.yaml --budget 6000 --seeds 0 1

Held-out accuracy during training and ``grpo check`` are off in the grpo runs
(they would cost time the bare one does not spend); ``grpo eval`` measures
afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# counts the completion tokens of every generation call (all rounds), stops at the budget;
# the same in the bare script and in grpo train (which runs this driver in-process)
DRIVER = r'''
import json, sys, time
import torch
from transformers import TrainerCallback
import trl

budget, out = int(sys.argv[1]), sys.argv[2]
TOKENS = {"n": 0}
_real = trl.GRPOTrainer._generate_and_score_completions


def counted(self, inputs):
    result = _real(self, inputs)
    if self.model.training:
        mask = result["completion_mask"]
        TOKENS["n"] += int(self.accelerator.gather(mask.sum()).sum())
    return result


trl.GRPOTrainer._generate_and_score_completions = counted
STEPS = []


class Budget(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "reward" in logs:
            STEPS.append({"time": time.time(), "tokens": TOKENS["n"], **{k: v for k, v in logs.items()
                          if isinstance(v, (int, float))}})
            if TOKENS["n"] >= budget:
                control.should_training_stop = True


def report(extra=None):
    print("RESULT " + json.dumps({"tokens": TOKENS["n"], "steps": STEPS, **(extra or {})}), flush=True)
'''

BARE = DRIVER + r'''
import yaml
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer
import grpo_core
from grpo_core.config.models import load

cfg = yaml.safe_load(open(sys.argv[3]))
seed, max_steps = int(sys.argv[4]), int(sys.argv[5])
funcs, weights = grpo_core.compose_rewards(cfg["rewards"])
d = cfg["dataset"]
ds = grpo_core.build_prompts(grpo_core.load_dataset(d["name"], **d.get("params", {})), d.get("system_prompt"))
model, tok = load(cfg["model"]["id"], dtype="float32", device="cpu", log=lambda *a: None)
lora = cfg["lora"]
args = GRPOConfig(output_dir=out, max_steps=max_steps, learning_rate=cfg["learning_rate"],
                  lr_scheduler_type="constant_with_warmup", warmup_steps=cfg.get("warmup_steps", 0),
                  per_device_train_batch_size=cfg["per_device_train_batch_size"],
                  num_generations=cfg["num_generations"], max_completion_length=cfg["max_completion_length"],
                  temperature=cfg.get("temperature", 1.0), beta=cfg.get("beta", 0.0),
                  activation_checkpointing=False, save_strategy="no", report_to=[], logging_steps=1,
                  use_cpu=True, bf16=False, seed=seed, reward_weights=weights)
peft = LoraConfig(r=lora["r"], lora_alpha=lora["lora_alpha"], lora_dropout=0.0,
                  target_modules=lora.get("target_modules", "all-linear"), task_type="CAUSAL_LM")
t0 = time.time()
trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=ds, processing_class=tok,
                      peft_config=peft, callbacks=[Budget()])
trainer.train()
trainer.save_model(out + "/adapter")
report({"wall": time.time() - t0})
'''

GRPO = DRIVER + r'''
from grpo_core.config.load import load_config
from grpo_core.run.train import run

overrides = sys.argv[3:]
t0 = time.time()
cfg = load_config(overrides[0], overrides[1:] + ["--output_dir", out])
run(cfg, overwrite=True, check=False, extra_callbacks=[Budget()], log=lambda m: None)
report({"wall": time.time() - t0})
'''


def _run(script: str, argv: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"run failed ({argv[:2]}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(line[len("RESULT "):])


def _eval(config: Path, adapter: Path, overrides: list[str], env: dict, limit: int) -> dict:
    report = adapter.parent / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "grpo_core", "eval", str(config), "--checkpoint", str(adapter),
                           "--limit", str(limit), "--output", str(report), *overrides],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"grpo eval failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text())
    return {"base": data["base"]["accuracy"], "trained": data["trained"]["accuracy"]}


def _flat(steps: list[dict]) -> float:
    """The flat share of the groups trained on: dynamic sampling logs it, else TRL's zero-std share."""
    key = "sampling/flat_share_trained" if steps and "sampling/flat_share_trained" in steps[0] else \
        "frac_reward_zero_std"
    values = [s[key] for s in steps if key in s]
    return statistics.mean(values) if values else float("nan")


def _step_time(steps: list[dict]) -> float:
    """Median wall time between step logs, the first step (warm-up) left out."""
    times = [s["time"] for s in steps]
    gaps = [b - a for a, b in zip(times[1:], times[2:])]
    return statistics.median(gaps) if gaps else float("nan")


def one(which: str, seed: int, opts, tmp: Path, env: dict) -> dict:
    out = tmp / f"{which}-{seed}"
    common = ["--seed", str(seed), "--lr_scheduler_type", "constant_with_warmup", "--heldout.enabled", "false",
              "--max_steps", str(opts.max_steps), *opts.extra]
    if which == "bare":
        result = _run(BARE, [str(opts.budget), str(out), str(opts.config), str(seed), str(opts.max_steps)], env)
    else:
        dyn = ["--sampling.dynamic", "true", "--sampling.max_rounds", str(opts.max_rounds),
               "--sampling.metric", opts.metric] if which == "dynamic" else ["--sampling.dynamic", "false"]
        result = _run(GRPO, [str(opts.budget), str(out), str(opts.config), *common, *dyn], env)
    acc = _eval(opts.config, out / "adapter", opts.extra, env, opts.limit)
    steps = result["steps"]
    return {"config": which, "seed": seed, "base": acc["base"], "accuracy": acc["trained"], "flat": _flat(steps),
            "tokens": result["tokens"], "steps": len(steps), "wall": result["wall"], "step_time": _step_time(steps)}


def table(rows: list[dict]) -> str:
    head = f"{'config':8} {'seed':>4} {'held-out acc':>12} {'(base)':>7} {'flat trained':>12} {'tokens':>7} " \
           f"{'steps':>5} {'wall s':>7} {'s/step':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['config']:8} {r['seed']:>4} {r['accuracy']:>12.3f} {r['base']:>7.3f} {r['flat']:>12.2f} "
                     f"{r['tokens']:>7} {r['steps']:>5} {r['wall']:>7.0f} {r['step_time']:>7.2f}")
    return "\n".join(lines)


def summary(rows: list[dict]) -> list[str]:
    out = []
    by = {c: [r for r in rows if r["config"] == c] for c in ("bare", "grpo", "dynamic")}
    mean = lambda c, k: statistics.mean(r[k] for r in by[c]) if by[c] else float("nan")  # noqa: E731
    for c in ("bare", "grpo", "dynamic"):
        if by[c]:
            out.append(f"{c:8} mean held-out accuracy {mean(c, 'accuracy'):.3f} (base {mean(c, 'base'):.3f}), "
                       f"flat share trained {mean(c, 'flat'):.2f}, {mean(c, 'tokens'):.0f} tokens, "
                       f"{mean(c, 'steps'):.1f} steps, {mean(c, 'wall'):.0f} s")
    if by["bare"] and by["grpo"]:
        out.append(f"step time grpo/bare: {mean('grpo', 'step_time') / mean('bare', 'step_time'):.3f} "
                   f"(goal <= 1.02)")
    if by["bare"] and by["dynamic"]:
        out.append(f"held-out accuracy dynamic - bare: {mean('dynamic', 'accuracy') - mean('bare', 'accuracy'):+.3f}; "
                   f"wall time dynamic/bare: {mean('dynamic', 'wall') / mean('bare', 'wall'):.2f}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "quickstart.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=2500, help="completion tokens generated per run")
    parser.add_argument("--max-steps", type=int, default=60, help="a cap; the budget stops runs first")
    parser.add_argument("--max-rounds", type=int, default=3, help="dynamic sampling's max_rounds")
    parser.add_argument("--metric", default="math.correctness",
                        help="dynamic sampling's metric: a group is flat when this reward agrees (or 'total')")
    parser.add_argument("--limit", type=int, default=64, help="held-out prompts for grpo eval")
    parser.add_argument("--configs", nargs="+", default=["bare", "grpo", "dynamic"])
    parser.add_argument("--quick", action="store_true", help="a tiny random model, 2 steps: a smoke test")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    opts, opts.extra = parser.parse_known_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error")
    with tempfile.TemporaryDirectory(prefix="grpo-learning-") as tmp:
        tmp = Path(tmp)
        if opts.quick:
            from grpo_core.testing import make_tiny_model

            model = make_tiny_model(tmp / "model")
            opts.extra += ["--model.id", str(model), "--max_completion_length", "8"]
            opts.budget, opts.max_steps, opts.limit, opts.seeds = 64, 2, 4, opts.seeds[:1]
            quick = tmp / "quick.yaml"
            import yaml

            cfg = yaml.safe_load(opts.config.read_text())
            cfg["model"]["id"], cfg["max_completion_length"] = str(model), 8
            quick.write_text(yaml.safe_dump(cfg))
            opts.config = quick
        rows = []
        t0 = time.perf_counter()
        for seed in opts.seeds:
            for which in opts.configs:
                rows.append(one(which, seed, opts, tmp, env))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(f"{len(rows)} runs, budget {opts.budget} completion tokens each ({time.perf_counter() - t0:.0f} s)")
    print(table(rows))
    print()
    print("\n".join(summary(rows)))
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
