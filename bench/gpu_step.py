"""GRPO step throughput, peak GPU memory and where the step's time goes: `grpo train`
against a bare `trl.GRPOTrainer` script on the same randomly initialised model of
a real shape (no weights needed), LoRA and full fine-tune, in the same run.

    python bench/gpu_step.py                      # GPU: Qwen2.5-0.5B and 1.5B shapes, LoRA and full
    python bench/gpu_step.py --shapes 0.5b --modes lora --steps 6
    python bench/gpu_step.py --smoke              # CPU smoke test: tiny shape, 3 steps

Both sides compute the same thing: LoRA loads the frozen base in bf16 (adapters
float32, as peft makes them), a full fine-tune keeps float32 weights, and both
train under bf16 autocast. The bare side is TRL's default generation (dynamic
cache, eager decoding, no autocast while sampling); grpo samples under the
run's autocast with a static cache and compiled decoding. The first step is
warm-up (it includes compilation) and is reported apart.

Per row: tokens/s (prompt + completion tokens TRL counts, per second of step
time after the first step), peak GPU memory, and the mean step split in
seconds: generation / rewards / the rest (log-probs, forward-backward,
optimizer), the same instrumentation on both sides, and on CUDA whether cuDNN's
attention kernel ran (grpo turns it off: model.cudnn_attention; bare TRL keeps
torch's default); then the grpo/bare ratios.
Needs grpo-datasets and grpo-rewards-format installed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SHAPES = {  # Qwen2.5 configs (hidden, intermediate, layers, heads, kv heads, vocab)
    "0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                 num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=None, tie_word_embeddings=True),
}
REWARDS = ["length.ideal(target=200, unit='tokens'):1.0", "repetition.ngram:0.5"]

# Timing shared by both sides: TRL's own methods, wrapped at class level (grpo's
# trainer subclasses GRPOTrainer, so its calls go through the same wrappers).
COMMON = """\
import json, sys, time
import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

CUDA = torch.cuda.is_available()
def now():
    if CUDA:
        torch.cuda.synchronize()
    return time.perf_counter()

SPENT = {"generation": 0.0, "rewards": 0.0}
def timed(name, method):
    def wrapper(self, *a, **k):
        t = now()
        try:
            return method(self, *a, **k)
        finally:
            SPENT[name] += now() - t
    return wrapper
GRPOTrainer._generate_single_turn = timed("generation", GRPOTrainer._generate_single_turn)
GRPOTrainer._calculate_rewards = timed("rewards", GRPOTrainer._calculate_rewards)

class Clock(TrainerCallback):
    def __init__(self):
        self.steps = []  # (seconds, generation, rewards, tokens after the step)
        self.tokens = 0
    def on_step_begin(self, args, state, control, **kw):
        self.t0, self.spent0 = now(), dict(SPENT)
    def on_step_end(self, args, state, control, **kw):
        t = now() - self.t0
        self.steps.append([t, SPENT["generation"] - self.spent0["generation"],
                           SPENT["rewards"] - self.spent0["rewards"], None])
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "num_tokens" in logs and self.steps:
            self.steps[-1][3] = logs["num_tokens"]

def report(clock):
    warm, timed_steps = clock.steps[0], clock.steps[1:]
    seconds = sum(s[0] for s in timed_steps)
    tokens = timed_steps[-1][3] - warm[3]
    n = len(timed_steps)
    gen, rew = sum(s[1] for s in timed_steps) / n, sum(s[2] for s in timed_steps) / n
    peak = torch.cuda.max_memory_allocated() / 2**30 if CUDA else 0.0
    print("RESULT " + json.dumps({"tokens_per_s": tokens / seconds, "peak_gib": peak, "warmup_s": warm[0],
                                  "step_s": seconds / n, "generation_s": gen, "rewards_s": rew,
                                  "rest_s": seconds / n - gen - rew,
                                  # the attention kernel grpo turns off on CUDA (model.cudnn_attention)
                                  "cudnn_sdpa": torch.backends.cuda.cudnn_sdp_enabled() if CUDA else None}))
"""

GRPO = COMMON + """\
from grpo_core.run import train as train_mod
from grpo_core.config.load import load_config
clock = Clock()
cfg = load_config(sys.argv[1], sys.argv[2:])
# check=False: the length rewards of a speed benchmark are no answer check (grpo check fails them)
result = train_mod.run(cfg, check=False, log=lambda *a, **k: print(*a, file=sys.stderr), extra_callbacks=[clock])
assert result.stopped is None, result.stopped
report(clock)
"""

BARE = COMMON + """\
from peft import LoraConfig
from trl import GRPOConfig
import grpo_core
spec = json.loads(sys.argv[1])
funcs, weights = grpo_core.compose_rewards(spec["rewards"])
ds = grpo_core.build_prompts(grpo_core.load_dataset("arithmetic", size=512, level=2), "plain")
cpu = not CUDA
args = GRPOConfig(output_dir=spec["out"], max_steps=spec["steps"], learning_rate=1e-5,
                  per_device_train_batch_size=spec["batch"], num_generations=spec["gens"],
                  max_completion_length=spec["completion"], gradient_checkpointing=spec["gc"],
                  save_strategy="no", report_to=[], logging_steps=1, use_cpu=cpu, bf16=not cpu,
                  seed=0, reward_weights=weights, generation_kwargs={"min_new_tokens": spec["completion"]},
                  # like for like: LoRA's frozen base in bf16 (peft keeps adapters float32)
                  model_init_kwargs={"dtype": "bfloat16"} if spec["lora"] and not cpu else None)
peft = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM") if spec["lora"] else None
clock = Clock()
trainer = GRPOTrainer(model=spec["model"], reward_funcs=funcs, args=args, train_dataset=ds,
                      peft_config=peft, callbacks=[clock])
trainer.train()
report(clock)
"""


def make_model(path: Path, shape: str) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config

    from grpo_core.testing import make_tokenizer

    tok = make_tokenizer()
    dims = dict(SHAPES[shape])
    dims["vocab_size"] = dims["vocab_size"] or len(tok)
    cfg = Qwen2Config(**dims, max_position_embeddings=4096, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if device == "cuda" else torch.float32)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    AutoTokenizer.from_pretrained(path)  # the saved tokenizer loads
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return path


def run(script: Path, argv: list[str], env: dict, timeout: float) -> dict | str:
    """The script's RESULT, or a one-line reason it has none."""
    try:
        proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, env=env,
                              timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f}s"
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        print(f"{script.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}", file=sys.stderr)
        return f"failed (exit {proc.returncode})"
    return json.loads(line[len("RESULT "):])


def allowance(deadline: float, runs_left: int, reserve: float = 40) -> float:
    """What is left of the budget, less a reserve for each run still to come (at least 60 s)."""
    return max(deadline - time.monotonic() - reserve * (runs_left - 1), 60)


def grpo_config(path: Path, model: Path, out: Path, lora: bool, o, cudnn: bool = False) -> Path:
    path.write_text(json.dumps({
        "model": {"id": str(model), "cudnn_attention": cudnn}, "lora": {"r": 16, "lora_alpha": 32} if lora else False,
        "dataset": {"name": "arithmetic", "params": {"size": 512, "level": 2}, "system_prompt": "plain"},
        "rewards": REWARDS, "max_steps": o.steps, "learning_rate": 1e-5,
        "per_device_train_batch_size": o.batch, "num_generations": o.gens,
        "max_completion_length": o.completion, "gradient_checkpointing": not lora,
        "save_strategy": "no", "report_to": [], "seed": 0, "output_dir": str(out),
        "generation_kwargs": {"min_new_tokens": o.completion}, "health": False}))
    return path


def split(r: dict | str) -> str:
    if isinstance(r, str):
        return r
    return (f"{r['tokens_per_s']:.0f} tok/s, {r['peak_gib']:.2f} GiB, {r['step_s']:.2f}s = gen {r['generation_s']:.2f} + rew {r['rewards_s']:.3f} + "
            f"rest {r['rest_s']:.2f} (warm-up {r['warmup_s']:.0f}s"
            + ("" if r.get("cudnn_sdpa") is None else f"; cuDNN attention {'on' if r['cudnn_sdpa'] else 'off'}") + ")")


def table(rows) -> None:
    print(f"\n{'shape':6} {'mode':10} {'grpo tok/s':>11} {'bare tok/s':>11} {'ratio':>6} "
          f"{'grpo GiB':>9} {'bare GiB':>9} {'mem':>5}")
    for shape, mode, g, b in rows:
        if isinstance(g, dict) and isinstance(b, dict):
            print(f"{shape:6} {mode:10} {g['tokens_per_s']:11.0f} {b['tokens_per_s']:11.0f} "
                  f"{g['tokens_per_s'] / b['tokens_per_s']:6.2f} {g['peak_gib']:9.2f} {b['peak_gib']:9.2f} "
                  f"{g['peak_gib'] / max(b['peak_gib'], 1e-9):5.2f}")
        else:
            print(f"{shape:6} {mode:10} grpo: {g if isinstance(g, str) else 'ok'}; bare: {b if isinstance(b, str) else 'ok'}")
    print("\nstep split (mean seconds per step after the first: generation + rewards + the rest)")
    for shape, mode, g, b in rows:
        print(f"{shape:6} {mode:10} grpo {split(g)}\n{'':12} bare {split(b)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", default=["0.5b", "1.5b"], choices=sorted(SHAPES))
    p.add_argument("--modes", nargs="+", default=["lora", "full"], choices=["lora", "full"])
    p.add_argument("--steps", type=int, default=3, help="steps per run, the first being warm-up (default 3)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--gens", type=int, default=8)
    p.add_argument("--completion", type=int, default=256, help="completion tokens (forced with min_new_tokens)")
    p.add_argument("--budget", type=float, default=480, help="seconds for the whole benchmark (default 480)")
    p.add_argument("--smoke", action="store_true", help="CPU smoke test: tiny shape, 3 steps, short completions")
    p.add_argument("--cudnn", action="store_true",
                   help="also run grpo's side with cuDNN's attention kernel on (model.cudnn_attention: true): "
                        "what turning it off costs")
    o = p.parse_args()
    if o.smoke:
        o.shapes, o.modes, o.steps, o.batch, o.gens, o.completion = ["tiny"], ["lora"], 3, 4, 4, 8
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error", GRPO_PLUGINS="grpo-datasets,grpo-rewards-format")
    deadline = time.monotonic() + o.budget
    runs_left = len(o.shapes) * len(o.modes) * (3 if o.cudnn else 2)
    rows = []
    with tempfile.TemporaryDirectory(prefix="grpo-gpu-") as tmp:
        tmp = Path(tmp)
        (tmp / "grpo_run.py").write_text(textwrap.dedent(GRPO))
        (tmp / "bare_run.py").write_text(textwrap.dedent(BARE))
        for shape in o.shapes:
            model = make_model(tmp / f"model-{shape}", shape)
            for mode in o.modes:
                lora = mode == "lora"
                out = tmp / f"out-{shape}-{mode}"
                cfg = grpo_config(tmp / f"{shape}-{mode}.yaml", model, out / "grpo", lora, o)
                g = run(tmp / "grpo_run.py", [str(cfg)], env, allowance(deadline, runs_left))
                runs_left -= 1
                spec = dict(model=str(model), rewards=REWARDS, out=str(out / "bare"), steps=o.steps, batch=o.batch,
                            gens=o.gens, completion=o.completion, gc=not lora, lora=lora)
                b = run(tmp / "bare_run.py", [json.dumps(spec)], env, allowance(deadline, runs_left))
                runs_left -= 1
                rows.append((shape, mode, g, b))
                print(f"{shape} {mode}: grpo {split(g)} | bare {split(b)}", flush=True)
                if o.cudnn:
                    cfg = grpo_config(tmp / f"{shape}-{mode}-cudnn.yaml", model, out / "grpo-cudnn", lora, o, cudnn=True)
                    c = run(tmp / "grpo_run.py", [str(cfg)], env, allowance(deadline, runs_left))
                    runs_left -= 1
                    rows.append((shape, f"{mode}+cuDNN", c, b))
                    print(f"{shape} {mode}: grpo, cuDNN attention on {split(c)}", flush=True)
    table(rows)


if __name__ == "__main__":
    main()
