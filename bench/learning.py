"""Does a grpo run teach more per generated token than bare TRL, and why?

Arms, each the same small run (the quickstart's model, data, reward functions resolved
by name, GRPOConfig):

- ``bare``: a bare ``trl.GRPOTrainer`` script;
- ``denominator``: the same, with flat groups kept but left out of the loss
  denominator (TRL's default ``dapo`` loss divides by every completion token, flat
  groups' too, so dropping them also raises the step size by about 1/(1-f)): it
  separates that effect from choosing which groups to train;
- ``grpo``: ``grpo train`` (the same trajectory as ``bare``: a check of grpo's overhead);
- ``dynamic``: ``grpo train`` with dynamic sampling (``sampling.dynamic``);
- ``zvp-ALPHA``: ``grpo train`` with RL-ZVP (``learning.method: zvp(alpha=ALPHA)``): flat
  correctness groups teach through entropy-shaped token advantages;
- ``sign``: ``learning.method: sign`` (flat groups get +-0.1 on every token: zvp's control);
- ``iter2``: two optimizer steps per generation batch (``num_iterations: 2``; ``iterN``: N);
- ``gen2``: two completions per prompt and twice the prompts per step (``num_generations: 2``);
- ``f32``, ``bf16``, ``bf16nc``: ``grpo train`` sampling in float32 / in bf16 with TRL's
  importance-sampling correction / in bf16 without it (``sampling.precision``);
- ``frontier``: ``sampling.prompts: frontier``: each batch's prompts chosen, before generating,
  for an expected pass rate near 0.5 on ``--metric`` (the dataset's difficulty knob where the
  config loads several difficulties, per-prompt estimates from the scored rollouts);
  ``frontier-T``: target T (``frontier-0.3``);
- ``A+B``: both (``zvp-0.1+iter2``, ``frontier+dynamic``).

Each row's ``flat-c`` is the share of generated groups flat on ``--metric`` (all right or all
wrong, every generation call: what a prompt sampler aims to lower); ``flat`` is TRL's
zero-spread share of the groups trained, on the total reward.

Axes: ``--axis tokens`` trains each run until it has generated the same number of
completion tokens (dynamic sampling's dropped groups count); ``--axis steps`` gives
each run the same number of optimizer steps; ``--axis time`` the same seconds of
training (``--seconds``; on a quiet machine: run it alone). ``--lrs`` sweeps learning rates (a
constant rate after warm-up, so stopping at the budget is fair); ``--seeds`` repeats.
Held-out accuracy is measured as ``grpo eval`` measures it (``--limit`` test prompts,
200 by default, greedy, math.correctness at full marks); every accuracy is printed with
its binomial standard error, every mean over seeds with its standard error, and each
arm's best rate. A full sweep takes an hour or more on 2 cores: ``--results FILE``
appends each finished cell and skips those already there, so it can run one cell at a
time (``--arms dynamic --lrs 1e-3 --seeds 2``) and the table covers them all (one file per
config: the base model is evaluated once, for the first cell on its number of prompts).
``--jobs 2`` runs two cells at once, each on half the cores; ``--keep DIR`` keeps every
cell's run (to evaluate it again, or read its rollouts).

    python bench/learning.py --results bench/learning.jsonl                # the config's lr, 3 seeds
    python bench/learning.py --results r.jsonl --lrs 5e-4 1e-3 2e-3 --axis steps --steps 12
    python bench/learning.py --quick --arms bare denominator dynamic       # a tiny model: a smoke test

Held-out accuracy during training and ``grpo check`` are off in the grpo runs (they
would cost time the bare one does not spend), and so is merged sampling (bare TRL samples
through peft's LoRA layers); ``grpo eval`` measures afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# counts the completion tokens of every generation call (all rounds), stops at the budget;
# the same in the bare script and in grpo train (which runs this driver in-process)
DRIVER = r'''
import json, sys, time
import torch
from transformers import TrainerCallback
import trl

kind, _, amount = sys.argv[1].partition(":")  # tokens:N, seconds:S, or none (equal steps)
budget, seconds, out = int(amount) if kind == "tokens" else 0, float(amount) if kind == "seconds" else 0.0, sys.argv[2]
TOKENS = {"n": 0}
FLAT = []  # per generation call: the share of its groups flat on LEARNING_METRIC (all right or all wrong)
METRIC = __import__("os").environ.get("LEARNING_METRIC")
DENOMINATOR = {"trained_only": False}  # the control arm: flat groups kept, left out of the loss denominator
_real = trl.GRPOTrainer._generate_and_score_completions


def counted(self, inputs):
    result = _real(self, inputs)
    if self.model.training:
        mask = result["completion_mask"]
        TOKENS["n"] += int(self.accelerator.gather(mask.sum()).sum())
        scores = list(self._logs["rewards"].get(METRIC, ()))[-mask.shape[0] * self.accelerator.num_processes:]
        g = self.num_generations
        groups = [scores[k:k + g] for k in range(0, len(scores), g)]
        if groups:  # (TRL's gathered scores of this call, the last rows of its batch logs)
            FLAT.append(sum(max(x) - min(x) <= 1e-6 for x in groups) / len(groups))
        if DENOMINATOR["trained_only"]:
            # dapo divides by every completion token of the batch, flat groups' too; here only the tokens of
            # rows whose advantage is not zero count (what dropping flat groups does to the step size)
            spread = (result["advantages"] != 0).to(mask.dtype).unsqueeze(1)
            result["num_items_in_batch"] = self.accelerator.gather((mask * spread).sum()).sum().clamp(min=1)
    return result


trl.GRPOTrainer._generate_and_score_completions = counted
STEPS = []


class Budget(TrainerCallback):
    start = None

    def on_train_begin(self, args, state, control, **kw):
        Budget.start = time.time()

    def on_step_end(self, args, state, control, **kw):
        if seconds and time.time() - Budget.start >= seconds:
            control.should_training_stop = True

    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:  # every optimizer step (a reused batch logs no reward)
            STEPS.append({"time": time.time(), "tokens": TOKENS["n"], **{k: v for k, v in logs.items()
                          if isinstance(v, (int, float))}})
            # a batch that serves several steps (num_iterations) is trained to its end: its tokens are spent
            every = max(1, args.steps_per_generation * args.num_iterations // args.gradient_accumulation_steps)
            if budget and TOKENS["n"] >= budget and state.global_step % every == 0:
                control.should_training_stop = True


def report(extra=None):
    print("RESULT " + json.dumps({"tokens": TOKENS["n"], "steps": STEPS, "flat_generated": FLAT, **(extra or {})}),
          flush=True)
'''

BARE = DRIVER + r'''
import yaml
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer
import grpo_core
from grpo_core.config.models import load

cfg = yaml.safe_load(open(sys.argv[3]))
seed, max_steps, lr = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
DENOMINATOR["trained_only"] = sys.argv[7] == "trained"
funcs, weights = grpo_core.compose_rewards(cfg["rewards"])
d = cfg["dataset"]
ds = grpo_core.build_prompts(grpo_core.load_dataset(d["name"], **d.get("params", {})), d.get("system_prompt"))
model, tok = load(cfg["model"]["id"], dtype="float32", device="cpu", log=lambda *a: None)
lora = cfg["lora"]
args = GRPOConfig(output_dir=out, max_steps=max_steps, learning_rate=lr,
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


def _eval(config: Path, adapter: Path, overrides: list[str], env: dict, limit: int, base: bool) -> dict:
    """``grpo eval``'s accuracies; the base model's only when ``base`` (it is the same for every cell)."""
    report = adapter.parent / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "grpo_core", "eval", str(config), "--checkpoint", str(adapter),
                           "--limit", str(limit), "--output", str(report), *(() if base else ("--no-base",)),
                           *overrides],
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


ARMS = ("bare", "denominator", "grpo", "dynamic", "zvp-0.05", "zvp-0.1", "zvp-0.2", "sign", "iter2", "iter4", "gen2",
        "f32", "bf16", "bf16nc", "frontier")


def arm_flags(arm: str, opts) -> list[str]:
    """``grpo train``'s overrides for an arm (``A+B``: both arms' flags)."""
    flags: list[str] = []
    for part in arm.split("+"):
        if part == "dynamic":
            flags += ["--sampling.dynamic", "true", "--sampling.max_rounds", str(opts.max_rounds),
                      "--sampling.metric", opts.metric]
        elif part.startswith("zvp-"):
            flags += ["--learning.method", f"zvp(alpha={float(part[4:])})", "--learning.metric", opts.metric]
        elif part == "sign":
            flags += ["--learning.method", "sign", "--learning.metric", opts.metric]
        elif part.startswith("iter") and part[4:].isdigit() and int(part[4:]) >= 2:
            flags += ["--num_iterations", part[4:]]
        elif part == "frontier" or (part.startswith("frontier-") and _number(part[9:])):
            target = f"(target={float(part[9:])})" if part != "frontier" else ""
            flags += ["--sampling.prompts", f"frontier{target}", "--learning.metric", opts.metric]
        elif part == "gen2":
            flags += ["--num_generations", "2"]
        elif part == "f32":
            flags += ["--sampling.precision", "float32"]
        elif part in ("bf16", "bf16nc"):  # bf16 sampling with TRL's correction; nc: without it
            flags += ["--sampling.precision", "bf16"]
            if part == "bf16nc":
                flags += ["--vllm_importance_sampling_correction", "false"]
        elif part != "grpo":
            raise SystemExit(f"unknown arm {part!r} in {arm!r}; arms: {', '.join(ARMS)} (or A+B)")
    if "--sampling.dynamic" not in flags:
        flags += ["--sampling.dynamic", "false"]
    return flags


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _arm_order(arm: str) -> tuple:
    return (ARMS.index(arm) if arm in ARMS else len(ARMS), arm)


def one(arm: str, seed: int, lr: float, opts, tmp: Path, env: dict, base: float | None = None) -> dict:
    """One cell: ``arm`` at learning rate ``lr`` and ``seed``, trained to the token budget
    (``--axis tokens``) or for ``--steps`` optimizer steps (``--axis steps``), then evaluated
    (the base model too, unless its accuracy ``base`` on these prompts is known)."""
    out = tmp / f"{opts.axis}-{arm}-{lr:g}-{seed}"
    budget, max_steps = {"tokens": (f"tokens:{opts.budget}", opts.max_steps),
                         "time": (f"seconds:{opts.seconds}", opts.max_steps),
                         "steps": ("none", opts.steps)}[opts.axis]
    # merged sampling off: the arms differ only in what they test (bare TRL samples from peft's layers)
    common = ["--seed", str(seed), "--learning_rate", str(lr), "--lr_scheduler_type", "constant_with_warmup",
              "--heldout.enabled", "false", "--max_steps", str(max_steps), "--model.merged_sampling", "false",
              *opts.extra]
    if arm in ("bare", "denominator"):
        result = _run(BARE, [budget, str(out), str(opts.config), str(seed), str(max_steps), str(lr),
                             "trained" if arm == "denominator" else "all"], env)
    else:
        result = _run(GRPO, [budget, str(out), str(opts.config), *common, *arm_flags(arm, opts)], env)
    acc = _eval(opts.config, out / "adapter", opts.extra, env, opts.limit, base is None)
    steps = result["steps"]
    return {"arm": arm, "axis": opts.axis, "lr": lr, "seed": seed, "base": acc["base"] if base is None else base,
            "accuracy": acc["trained"],
            "prompts": opts.limit, "flat": _flat(steps), "tokens": result["tokens"], "steps": len(steps),
            "flat_generated": statistics.mean(result["flat_generated"]) if result["flat_generated"] else None,
            "wall": result["wall"], "step_time": _step_time(steps)}


def binomial_se(p: float, n: int) -> float:
    """The standard error of an accuracy p measured on n prompts."""
    return (p * (1 - p) / n) ** 0.5 if n else float("nan")


def mean_se(values: list[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error (nan with fewer than two)."""
    m = statistics.mean(values)
    return m, (statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan"))


def table(rows: list[dict]) -> str:
    head = f"{'arm':14} {'axis':6} {'lr':>7} {'seed':>4} {'held-out acc':>15} {'(base)':>7} {'flat':>5} " \
           f"{'flat-c':>6} {'tokens':>7} {'steps':>5} {'wall s':>7} {'s/step':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        se = binomial_se(r["accuracy"], r.get("prompts", 0))
        lines.append(f"{r['arm']:14} {r['axis']:6} {r['lr']:>7g} {r['seed']:>4} {r['accuracy']:>7.3f} ± {se:.3f} "
                     f"{r['base']:>7.3f} {r['flat']:>5.2f} {_share(r.get('flat_generated')):>6} {r['tokens']:>7} "
                     f"{r['steps']:>5} {r['wall']:>7.0f} "
                     f"{r['step_time']:>7.2f}")
    return "\n".join(lines)


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _mean_flat(rows: list[dict]) -> float | None:
    """The mean share of generated groups flat on the metric (rows that measured it)."""
    got = [r["flat_generated"] for r in rows if r.get("flat_generated") is not None]
    return statistics.mean(got) if got else None


def summary(rows: list[dict]) -> list[str]:
    """Per arm, axis and learning rate: mean held-out accuracy over seeds ± its standard error,
    and each arm's best rate."""
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((r["axis"], r["arm"], r["lr"]), []).append(r)
    out = [f"{'axis':6} {'arm':14} {'lr':>7} {'seeds':>5} {'mean acc ± se':>15} {'base':>6} {'steps':>6} "
           f"{'tokens':>7} {'flat-c':>6}"]
    best: dict[tuple, tuple] = {}
    for (axis, arm, lr), rs in sorted(cells.items()):
        m, se = mean_se([r["accuracy"] for r in rs])
        out.append(f"{axis:6} {arm:14} {lr:>7g} {len(rs):>5} {m:>7.3f} ± {se:5.3f} "
                   f"{statistics.mean(r['base'] for r in rs):>6.3f} {statistics.mean(r['steps'] for r in rs):>6.1f} "
                   f"{statistics.mean(r['tokens'] for r in rs):>7.0f} {_share(_mean_flat(rs)):>6}")
        if (axis, arm) not in best or m > best[(axis, arm)][0]:
            best[(axis, arm)] = (m, se, lr)
    for (axis, arm), (m, se, lr) in sorted(best.items()):
        out.append(f"best rate, {axis}: {arm} at lr {lr:g}: {m:.3f} ± {se:.3f}")
    return out + differences(best)


def differences(best: dict[tuple, tuple]) -> list[str]:
    """Each arm's best against bare TRL's best on the same axis: the difference of the means,
    its standard error (the two means' SEs in quadrature) and their ratio."""
    out = []
    for (axis, arm), (m, se, lr) in sorted(best.items()):
        if arm == "bare" or (axis, "bare") not in best:
            continue
        mb, seb, lrb = best[(axis, "bare")]
        d, sd = m - mb, (se ** 2 + seb ** 2) ** 0.5
        ratio = f"{d / sd:+.1f} SE" if sd > 0 else "n/a"
        out.append(f"difference, {axis}: {arm} (lr {lr:g}) - bare (lr {lrb:g}): {d:+.3f} ± {sd:.3f} ({ratio})")
    return out


def read_results(path: Path | None) -> list[dict]:
    if path is None or not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def done(rows: list[dict], arm: str, axis: str, lr: float, seed: int) -> bool:
    return any((r["arm"], r["axis"], r["lr"], r["seed"]) == (arm, axis, lr, seed) for r in rows)


def _options():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "quickstart.yaml")
    parser.add_argument("--arms", nargs="+", default=["bare", "denominator", "dynamic"],
                        help=f"arms: {', '.join(ARMS)}, or two joined by + (zvp-0.1+iter2)")
    parser.add_argument("--axis", choices=("tokens", "steps", "time"), default="tokens",
                        help="equal completion-token budget, equal optimizer steps, or equal seconds of training")
    parser.add_argument("--seconds", type=float, default=150.0, help="seconds of training per run (--axis time)")
    parser.add_argument("--lrs", type=float, nargs="+", default=None,
                        help="learning rates to sweep (default: the config's)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=2500, help="completion tokens per run (--axis tokens)")
    parser.add_argument("--steps", type=int, default=12, help="optimizer steps per run (--axis steps)")
    parser.add_argument("--max-steps", type=int, default=60, help="a cap; the budget stops runs first")
    parser.add_argument("--max-rounds", type=int, default=3, help="dynamic sampling's max_rounds")
    parser.add_argument("--metric", default="math.correctness",
                        help="dynamic sampling's metric: a group is flat when this reward agrees (or 'total')")
    parser.add_argument("--limit", type=int, default=200, help="held-out prompts for grpo eval")
    parser.add_argument("--results", type=Path, default=None,
                        help="a JSONL file: each finished cell is appended, cells already in it are skipped "
                             "(run one cell at a time, or resume), and the table covers all of it")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each cell's run (adapter, metrics, rollouts) in this folder, as "
                             "AXIS-ARM-LR-SEED (default: a temporary folder, removed at the end)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="cells run at once, each with OMP_NUM_THREADS = cores / jobs (accuracy is what they "
                             "compare; their s/step then reads the shared machine)")
    parser.add_argument("--quick", action="store_true", help="a tiny random model, 2 steps: a smoke test")
    parser.add_argument("--json", type=Path, default=None, help="also write this run's rows as JSON")
    opts, opts.extra = parser.parse_known_args()
    return opts


def _quick(opts, tmp: Path) -> None:
    from grpo_core.testing import make_tiny_model

    model = make_tiny_model(tmp / "model")
    opts.extra += ["--model.id", str(model), "--max_completion_length", "8"]
    opts.budget, opts.max_steps, opts.steps, opts.limit, opts.seeds = 64, 2, 2, 4, opts.seeds[:1]
    quick = tmp / "quick.yaml"
    import yaml

    cfg = yaml.safe_load(opts.config.read_text())
    cfg["model"]["id"], cfg["max_completion_length"] = str(model), 8
    quick.write_text(yaml.safe_dump(cfg))
    opts.config = quick


def main() -> None:
    opts = _options()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error", LEARNING_METRIC=opts.metric)
    import yaml

    lrs = opts.lrs or [float(yaml.safe_load(opts.config.read_text())["learning_rate"])]
    for arm in opts.arms:
        if arm not in ("bare", "denominator"):
            arm_flags(arm, opts)  # an unknown arm stops here, before any run
    previous = read_results(opts.results)
    rows: list[dict] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grpo-learning-") as tmp:
        tmp = Path(tmp) if opts.keep is None else opts.keep
        tmp.mkdir(parents=True, exist_ok=True)
        if opts.quick:
            _quick(opts, tmp)
        cells = [(arm, lr, seed) for seed in opts.seeds for lr in lrs for arm in opts.arms
                 if not done(previous, arm, opts.axis, lr, seed)]
        if opts.jobs > 1:  # each cell's processes share the machine's cores
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // opts.jobs))
        lock = threading.Lock()

        def cell(k: int, arm: str, lr: float, seed: int) -> None:
            with lock:
                print(f"[{k}/{len(cells)}] {arm}, axis {opts.axis}, lr {lr:g}, seed {seed} "
                      f"({time.perf_counter() - t0:.0f} s so far)", flush=True)
                base = next((r["base"] for r in previous + rows if r.get("prompts") == opts.limit), None)
            row = one(arm, seed, lr, opts, tmp, env, base)
            with lock:
                rows.append(row)
                print(table([row]).splitlines()[-1], flush=True)
                if opts.results is not None and not opts.quick:
                    with open(opts.results, "a") as f:
                        f.write(json.dumps(row) + "\n")

        numbered = list(enumerate(cells, 1))
        known = any(r.get("prompts") == opts.limit for r in previous)
        if numbered and not known:  # the first cell evaluates the base model, once, before the rest start
            k, first = numbered.pop(0)
            cell(k, *first)
        with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            for future in [pool.submit(cell, k, *c) for k, c in numbered]:
                future.result()
    every = sorted(previous + rows if not opts.quick else rows,
                   key=lambda r: (r["axis"], r["lr"], _arm_order(r["arm"]), r["seed"]))
    print(f"\n{len(rows)} runs now, {len(every)} in all ({time.perf_counter() - t0:.0f} s)")
    print(table(every))
    print()
    print("\n".join(summary(every)))
    if opts.json:
        opts.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
