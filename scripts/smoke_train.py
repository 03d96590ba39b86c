"""A one-step GRPO run on a tiny random model, through the installed ``grpo`` alone.

Used by scripts/wheel_check.sh (the wheels installed into a fresh venv, run from a
folder outside the repository) and scripts/trl_range.sh (each TRL version of the
tested range). It needs grpo-core, grpo-datasets (``arithmetic``), grpo-rewards-math
and grpo-rewards-format installed; it imports nothing from a grpo checkout.

    python smoke_train.py [--workdir DIR] [--any-trl]

``--any-trl``: skip grpo's start-up refusal of a TRL or transformers outside the
tested range (``grpo_core.run.prepare.TESTED``), to find out whether one works.
Prints ``SMOKE ok`` (exit 0) or ``SMOKE failed: ...`` (exit 1) as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """\
# one step on a tiny random model: the rewards of three plugins, the arithmetic set
model:
  dtype: float32
lora:
  r: 4
  lora_alpha: 8
dataset:
  name: arithmetic
  params: {level: 1, size: 16}
  system_prompt: plain
rewards:
  - math.correctness(fallback_last_number=True):1.0
  - format.xml_incremental:0.2
  - length.ideal(target=8, unit='chars'):0.1
max_steps: 1
learning_rate: 1.0e-3
per_device_train_batch_size: 4
num_generations: 4
max_completion_length: 8
gradient_checkpointing: false
save_strategy: "no"
report_to: []
seed: 0
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None, help="where to write (default: a new temp folder)")
    parser.add_argument("--any-trl", action="store_true", help="train even with a TRL outside the tested range")
    args = parser.parse_args(argv)
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(key, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="grpo-smoke-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _run(work, args.any_trl)
    except Exception as exc:  # noqa: BLE001 - the verdict line is what the callers read
        print(f"SMOKE failed: {type(exc).__name__}: {exc}")
        return 1


def _run(work: Path, any_trl: bool) -> int:
    import grpo_core
    from grpo_core.cli import main as grpo
    from grpo_core.testing import make_tiny_model

    if any_trl:
        from grpo_core.run import prepare

        prepare.check_versions = lambda: None
    here = Path(grpo_core.__file__).resolve()
    print(f"grpo_core from {here.parent}")
    model = make_tiny_model(work / "tiny")
    config = work / "smoke.yaml"
    config.write_text(CONFIG)
    out = work / "out"
    start = time.monotonic()
    rc = grpo(["train", str(config), "--model.id", str(model), "--output_dir", str(out)])
    seconds = time.monotonic() - start
    if rc != 0:
        print(f"SMOKE failed: grpo train exited {rc}")
        return 1
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    trained = [s for s in steps if s.get("step") == 1 and "loss" in s]
    if not trained or not (out / "adapter" / "adapter_config.json").is_file():
        print(f"SMOKE failed: no step 1 with a loss in {out / 'metrics.jsonl'} or no adapter ({len(steps)} lines)")
        return 1
    print(f"SMOKE ok: 1 step in {seconds:.1f}s, loss {trained[0]['loss']}, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
