"""`grpo merge ADAPTER_DIR --output DIR`: merge a LoRA adapter into its base model."""

from __future__ import annotations

import argparse
from pathlib import Path

from grpo_core.base.errors import ConfigError, GrpoError
from grpo_core.commands import SUMMARIES
from grpo_core.config.precision import DTYPES, normalize_dtype
from grpo_core.trainer.generation import is_adapter_dir, load_policy, run_weights


def add_parser(sub) -> None:
    p = sub.add_parser("merge", help=SUMMARIES["merge"])
    p.add_argument("adapter", type=Path, help="directory with adapter_config.json (a grpo train output)")
    p.add_argument("--output", type=Path, required=True, help="where to save the merged model")
    p.add_argument("--base", default=None, help="base model (default: the one the adapter names)")
    p.add_argument("--dtype", default="auto", type=_dtype, help="dtype to save in (auto, float32, bfloat16, float16)")
    p.set_defaults(func=run)


def _dtype(text: str) -> str:
    """``--dtype`` as precision reads a model's dtype (bf16 is bfloat16); another is refused by name."""
    try:
        return normalize_dtype(text)
    except ConfigError:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(DTYPES)} (or bf16, fp16, fp32)") from None


def merge_adapter(adapter: Path, output: Path, base: str | None = None, dtype: str = "auto", log=print) -> Path:
    if not adapter.is_dir():
        raise GrpoError(f"{adapter} is not a directory; give the adapter directory of a grpo train run.")
    adapter = run_weights(adapter)
    if not is_adapter_dir(adapter):
        hint = " It holds a full model: nothing to merge." if (adapter / "config.json").is_file() else ""
        raise GrpoError(f"{adapter} has no adapter_config.json, so it is not a LoRA adapter.{hint}")
    if output.exists() and any(output.iterdir()):
        raise GrpoError(f"--output {output} exists and is not empty; choose a new directory.")
    model, tokenizer = load_policy(str(adapter), base=base, dtype=dtype, device="cpu", log=log)
    merged = model.merge_and_unload()
    output.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(output)
    tokenizer.save_pretrained(output)
    log(f"merged {adapter} into its base; saved model and tokenizer to {output}")
    return output


def run(args) -> int:
    merge_adapter(args.adapter, args.output, args.base, args.dtype)
    return 0
