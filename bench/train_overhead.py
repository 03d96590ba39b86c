"""Per-step cost of `grpo train` over a bare `trl.GRPOTrainer` script: the same
tiny-model GRPO run (same rewards resolved by name, same data, seed, LoRA and
GRPOConfig), alternating the two, several runs each, checking that both logged
the same rewards at every step (the same run, really).

A step's time is the wall time between consecutive step logs, so callbacks and
logging count (the first step of a run is left out as warm-up). Both runs do the
same work at step k, so the headline figure takes, for each step k, the best
time over the runs (other processes' load only ever adds time), and compares
the medians over steps. The median of the per-run ratios is printed too.

    python bench/train_overhead.py [--runs 10] [--steps 30]
    python bench/train_overhead.py --model smollm2-135m --runs 3 --steps 10 --max-completion-length 48

With the tiny model both run with OMP_NUM_THREADS=1: on a shared machine a tiny
model's steps otherwise vary tenfold with the other processes' load. ``--model``
takes a real model (an alias, a local folder) and runs with torch's own thread
count; grpo train samples there with ``model.merged_sampling: false`` (merged
weights sample the same tokens only up to rounding, so the two runs would part
ways), unless ``--merged``, which measures the default instead (the rewards then
differ, and the check says so). Needs grpo-datasets
(arithmetic) and grpo-rewards-format (length.ideal, repetition.ngram), as
installed by scripts/setup.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REWARDS = ["length.ideal(target=24, unit='chars'):1.0", "repetition.ngram:0.5"]
DATASET = {"name": "arithmetic", "params": {"size": 200, "level": 1}, "system_prompt": "plain"}

CONFIG = """\
model: {{id: {model}, dtype: float32, merged_sampling: {merged}}}
lora: {{r: 8, lora_alpha: 16}}
dataset: {dataset}
rewards: {rewards}
max_steps: {steps}
learning_rate: 1.0e-4
per_device_train_batch_size: 8
num_generations: 4
max_completion_length: {length}
gradient_checkpointing: false
save_strategy: "no"
report_to: []
logging_steps: 1
use_cpu: true
bf16: false
seed: 0
health: false
"""

BARE = """\
import json, sys, time
from peft import LoraConfig
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer
import grpo_core

model, steps, out, length = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
funcs, weights = grpo_core.compose_rewards({rewards!r})
d = {dataset!r}
ds = grpo_core.build_prompts(grpo_core.load_dataset(d["name"], **d["params"]), d["system_prompt"])
args = GRPOConfig(output_dir=out, max_steps=steps, learning_rate=1e-4, per_device_train_batch_size=8,
                  num_generations=4, max_completion_length=length, gradient_checkpointing=False,
                  save_strategy="no", report_to=[], logging_steps=1, use_cpu=True, bf16=False,
                  seed=0, reward_weights=weights)
peft = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
times = []


class Clock(TrainerCallback):  # only to read the time of each step log, as grpo train's metrics.jsonl does
    def on_log(self, args, state, control, logs=None, **kw):
        if "reward" in logs:
            times.append(time.time())


trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=ds, peft_config=peft,
                      callbacks=[Clock()])
metrics = trainer.train().metrics
steps = [r for r in trainer.state.log_history if "reward" in r]
print("RESULT " + json.dumps({{"runtime": metrics["train_runtime"], "rewards": [r["reward"] for r in steps],
                              "times": times}}))
"""


def run_grpo(cfg: Path, out: Path, env: dict) -> dict:
    # --no-check: the bare side runs no reward check either (like for like)
    proc = subprocess.run([sys.executable, "-m", "grpo_core", "train", str(cfg), "--output_dir", str(out), "--no-check"],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"grpo train failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    runtime = next(r["train_runtime"] for r in recs if "train_runtime" in r)
    steps = [r for r in recs if "reward" in r]
    return {"runtime": runtime, "rewards": [r["reward"] for r in steps],
            "times": [r["time"] for r in steps]}


def run_bare(script: Path, model: Path, steps: int, out: Path, env: dict, length: int) -> dict:
    proc = subprocess.run([sys.executable, str(script), str(model), str(steps), str(out), str(length)],
                          capture_output=True, text=True, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"bare GRPOTrainer script failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def callback_cost(metrics: Path, tmp: Path, n: int = 2000) -> float:
    """Seconds grpo train's own callbacks (metrics line, console summary, health
    checks) take per step, timed in process on a real step log."""
    import io

    from grpo_core.config.schema import HealthSection
    from grpo_core.run.callbacks import HealthCallback, MetricsCallback

    rec = next(json.loads(x) for x in metrics.read_text().splitlines() if '"reward"' in x)
    logs = {k: v for k, v in rec.items() if k not in ("step", "stage", "stage_step", "time")}

    class State:
        is_world_process_zero, global_step, max_steps = True, 5, 30

    calls = [MetricsCallback(tmp / "m.jsonl", "main", stream=io.StringIO()),
             HealthCallback(HealthSection(), tmp / "h.jsonl", warn=lambda m: None)]
    t = time.perf_counter()
    for _ in range(n):
        for c in calls:
            c.on_log(None, State, None, logs=dict(logs))
    return (time.perf_counter() - t) / n


def _intervals(times: list[float]) -> list[float]:
    """Intervals between consecutive step logs, the first step left out."""
    return [b - a for a, b in zip(times[1:], times[2:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs of each (default 10)")
    parser.add_argument("--steps", type=int, default=30, help="GRPO steps per run (default 30)")
    parser.add_argument("--model", default=None,
                        help="a real model (alias such as smollm2-135m, or a local folder); default: a tiny random one")
    parser.add_argument("--max-completion-length", type=int, default=16)
    parser.add_argument("--merged", action="store_true",
                        help="grpo train with model.merged_sampling at its default (auto), not false")
    parser.add_argument("--calibrate", action="store_true",
                        help="A/A check: run the bare script in both slots, to see the noise floor")
    opts = parser.parse_args()

    from grpo_core.testing import make_tiny_model

    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error", GRPO_PLUGINS="grpo-datasets,grpo-rewards-format")
    if opts.model is None:
        env["OMP_NUM_THREADS"] = "1"
    length = opts.max_completion_length
    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as tmp:
        tmp = Path(tmp)
        if opts.model is None:
            model = make_tiny_model(tmp / "model", hidden_size=64)
        else:
            from grpo_core.config.models import resolve

            model = resolve(opts.model)
        cfg = tmp / "bench.yaml"
        cfg.write_text(CONFIG.format(model=model, steps=opts.steps, dataset=json.dumps(DATASET),
                                     rewards=json.dumps(REWARDS), length=length,
                                     merged="auto" if opts.merged else "false"))
        script = tmp / "bare.py"
        script.write_text(textwrap.dedent(BARE.format(rewards=REWARDS, dataset=DATASET)))

        grpo_times, bare_times, grpo_steps, bare_steps, same = [], [], [], [], True
        own = None
        t0 = time.perf_counter()
        for i in range(opts.runs):
            order = ("grpo", "bare") if i % 2 == 0 else ("bare", "grpo")
            results = {}
            for which in order:
                out = tmp / f"{which}-{i}"
                results[which] = (run_grpo(cfg, out, env) if which == "grpo" and not opts.calibrate
                                  else run_bare(script, model, opts.steps, out, env, length))
            g, b = results["grpo"], results["bare"]
            if own is None and not opts.calibrate:
                own = callback_cost(tmp / f"grpo-{i}" / "metrics.jsonl", tmp)
            grpo_steps.append(_intervals(g["times"]))
            bare_steps.append(_intervals(b["times"]))
            grpo_times.append(statistics.median(grpo_steps[-1]))
            bare_times.append(statistics.median(bare_steps[-1]))
            same &= [round(x, 5) for x in g["rewards"]] == [round(x, 5) for x in b["rewards"]]
            print(f"run {i + 1}/{opts.runs}: grpo train {grpo_times[-1] * 1000:.1f} ms/step, "
                  f"bare GRPOTrainer {bare_times[-1] * 1000:.1f} ms/step", flush=True)

    best_g = statistics.median(min(col) for col in zip(*grpo_steps))
    best_b = statistics.median(min(col) for col in zip(*bare_steps))
    paired = statistics.median(x / y for x, y in zip(grpo_times, bare_times))
    print()
    print(f"{opts.runs} runs x {opts.steps} steps each, alternating ({time.perf_counter() - t0:.0f}s)")
    print(f"same rewards at every step in both: {'yes' if same else 'NO'}")
    print(f"median per-run ratio grpo/bare: {paired:.3f} (medians {statistics.median(grpo_times) * 1000:.1f} "
          f"vs {statistics.median(bare_times) * 1000:.1f} ms/step)")
    print(f"per-step time, best of {opts.runs} runs per step: grpo train {best_g * 1000:.1f} ms, "
          f"bare GRPOTrainer {best_b * 1000:.1f} ms")
    print(f"ratio grpo/bare: {best_g / best_b:.3f}  (target <= 1.02)")
    if own is not None:
        print(f"grpo train's own callbacks, timed in process: {own * 1000:.3f} ms per step "
              f"({own / best_b:.2%} of a step here)")

if __name__ == "__main__":
    main()
