"""GRPO step throughput and peak GPU memory: `grpo train` against a bare
`trl.GRPOTrainer` script on the same randomly initialised model of a real shape
(no weights needed), LoRA and full fine-tune, in the same run.

    python bench/gpu_step.py                      # GPU: Qwen2.5-0.5B and 1.5B shapes
    python bench/gpu_step.py --shapes 0.5b --steps 8 --completion 256
    python bench/gpu_step.py --smoke              # CPU smoke test: tiny shape, 2 steps

Prints, per shape and mode, tokens/s (prompt + completion tokens that TRL counts,
per second of step time, first step left out) and peak GPU memory, and the
grpo/bare ratio of each. Needs grpo-datasets and grpo-rewards-format installed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
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

COMMON = """\
import json, sys, time
import torch
from transformers import TrainerCallback

class Clock(TrainerCallback):
    def __init__(self):
        self.marks = []
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "num_tokens" in logs:
            self.marks.append((time.time(), logs["num_tokens"]))

def report(marks):
    (t0, n0), (t1, n1) = marks[0], marks[-1]  # first step is warm-up
    peak = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0
    print("RESULT " + json.dumps({"tokens_per_s": (n1 - n0) / (t1 - t0), "peak_gib": peak}))
"""

GRPO = COMMON + """\
from grpo_core import train as train_mod
from grpo_core.config import load_config
clock = Clock()
real = train_mod.make_callbacks if hasattr(train_mod, "make_callbacks") else None
import transformers
orig_init = transformers.Trainer.__init__
def init(self, *a, **k):
    k["callbacks"] = list(k.get("callbacks") or []) + [clock]
    orig_init(self, *a, **k)
transformers.Trainer.__init__ = init
cfg = load_config(sys.argv[1], sys.argv[2:])
train_mod.run(cfg, log=lambda *a, **k: None)
report(clock.marks)
"""

BARE = COMMON + """\
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer
import grpo_core
spec = json.loads(sys.argv[1])
funcs, weights = grpo_core.compose_rewards(spec["rewards"])
ds = grpo_core.build_prompts(grpo_core.load_dataset("arithmetic", size=512, level=2), "plain")
cpu = not torch.cuda.is_available()
args = GRPOConfig(output_dir=spec["out"], max_steps=spec["steps"], learning_rate=1e-5,
                  per_device_train_batch_size=spec["batch"], num_generations=spec["gens"],
                  max_completion_length=spec["completion"], gradient_checkpointing=spec["gc"],
                  save_strategy="no", report_to=[], logging_steps=1, use_cpu=cpu, bf16=not cpu,
                  seed=0, reward_weights=weights, generation_kwargs={"min_new_tokens": spec["completion"]})
peft = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM") if spec["lora"] else None
clock = Clock()
trainer = GRPOTrainer(model=spec["model"], reward_funcs=funcs, args=args, train_dataset=ds,
                      peft_config=peft, callbacks=[clock])
trainer.train()
report(clock.marks)
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
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if torch.cuda.is_available() else torch.float32)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    AutoTokenizer.from_pretrained(path)  # the saved tokenizer loads
    return path


def run(script: Path, argv: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        sys.exit(f"{script.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(line[len("RESULT "):])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", default=["0.5b", "1.5b"], choices=sorted(SHAPES))
    p.add_argument("--modes", nargs="+", default=["lora", "full"], choices=["lora", "full"])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--gens", type=int, default=8)
    p.add_argument("--completion", type=int, default=256, help="completion tokens (forced with min_new_tokens)")
    p.add_argument("--smoke", action="store_true", help="CPU smoke test: tiny shape, 3 steps, short completions")
    o = p.parse_args()
    if o.smoke:
        o.shapes, o.modes, o.steps, o.batch, o.gens, o.completion = ["tiny"], ["lora"], 3, 4, 4, 8
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               TRANSFORMERS_VERBOSITY="error", GRPO_PLUGINS="grpo-datasets,grpo-rewards-format")
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
                cfg = tmp / f"{shape}-{mode}.yaml"
                cfg.write_text(json.dumps({
                    "model": {"id": str(model)}, "lora": {"r": 16, "lora_alpha": 32} if lora else False,
                    "dataset": {"name": "arithmetic", "params": {"size": 512, "level": 2}, "system_prompt": "plain"},
                    "rewards": REWARDS, "max_steps": o.steps, "learning_rate": 1e-5,
                    "per_device_train_batch_size": o.batch, "num_generations": o.gens,
                    "max_completion_length": o.completion, "gradient_checkpointing": not lora,
                    "save_strategy": "no", "report_to": [], "seed": 0, "output_dir": str(out / "grpo"),
                    "generation_kwargs": {"min_new_tokens": o.completion}, "health": False}))
                g = run(tmp / "grpo_run.py", [str(cfg)], env)
                spec = dict(model=str(model), rewards=REWARDS, out=str(out / "bare"), steps=o.steps, batch=o.batch,
                            gens=o.gens, completion=o.completion, gc=not lora, lora=lora)
                b = run(tmp / "bare_run.py", [json.dumps(spec)], env)
                rows.append((shape, mode, g, b))
                print(f"{shape} {mode}: grpo {g['tokens_per_s']:.0f} tok/s {g['peak_gib']:.2f} GiB | "
                      f"bare {b['tokens_per_s']:.0f} tok/s {b['peak_gib']:.2f} GiB", flush=True)
    print()
    print(f"{'shape':6} {'mode':5} {'grpo tok/s':>11} {'bare tok/s':>11} {'ratio':>6} "
          f"{'grpo GiB':>9} {'bare GiB':>9}")
    for shape, mode, g, b in rows:
        print(f"{shape:6} {mode:5} {g['tokens_per_s']:11.0f} {b['tokens_per_s']:11.0f} "
              f"{g['tokens_per_s'] / b['tokens_per_s']:6.3f} {g['peak_gib']:9.2f} {b['peak_gib']:9.2f}")


if __name__ == "__main__":
    main()
