"""The rollout log's cost per step: building and writing a step's records as the
trainer does (grpo_core.trainer.rollout_log.rows + write), for the CPU quickstart's batch
and for the GPU benchmark's, as a share of the step each rides on.

    python bench/rollout_log.py [--repeat 30]

The steps it is compared with were measured elsewhere: the CPU quickstart's step takes
6-20 s on 2 cores (README, Training); bench/gpu_step.py's LoRA step took 2.96 s on an
H100 (README, On a GPU).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from grpo_core.trainer import rollout_log

BATCHES = {  # name: (completions, characters each, the step it rides on in seconds)
    "CPU quickstart (8 x ~150 chars)": (8, 150, 6.0),
    "GPU benchmark (128 x ~1000 chars)": (128, 1000, 2.96),
}


def one_step(folder: Path, step: int, n: int, chars: int) -> float:
    inputs = [{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}], "question": f"What is {i} + 1?",
               "answer": str(i + 1)} for i in range(n)]
    completions = [[{"role": "assistant", "content": "7 + 5 = 12. " * (chars // 12)}] for _ in range(n)]
    rewards = {"math.correctness": [1.0] * n, "length.soft_overlong": [-0.1] * n}
    t = time.perf_counter()
    records = rollout_log.rows(step, "main", 0, 4, inputs, completions, rewards, [1.0, 1.0], [0.5] * n,
                               {"math.correctness/answer": ["12"] * n}, [40] * n, [False] * n, {})
    rollout_log.write(folder, step, records)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (n, chars, step_s) in BATCHES.items():
            folder = Path(tmp) / name.split()[0]
            one_step(folder, 0, n, chars)  # pyarrow's import and first write: once per run
            cost = statistics.median(one_step(folder, s, n, chars) for s in range(1, opts.repeat + 1))
            print(f"{name}: {cost * 1000:.2f} ms per step = {cost / step_s:.3%} of a {step_s:g} s step "
                  f"(goal under 2 %)")


if __name__ == "__main__":
    main()
