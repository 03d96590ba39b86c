"""Dynamic sampling's rounds as one larger generate call (``sampling.oversample``) against
one call per round: the quickstart's run (SmolLM2-135M, LoRA, dynamic sampling on
correctness) for ``--steps`` steps, both ways for each seed, in this one process (the
order alternating from seed to seed). The runs train different groups (oversampling picks
among more), so what is compared is cost: training wall time per step, generate calls,
completion tokens generated, and the flat share trained (flat groups that filled places
when the rounds ran out). Held-out accuracy, grpo check and checkpoints are off.

    python bench/oversample.py [--steps 8] [--seeds 0 1] [--oversample 3] [--max-rounds 2]
    python bench/oversample.py --tiny      # a tiny random model: a smoke test
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from dynamic_reference import timed_run  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parent.parent


def one_run(config: Path, steps: int, out: Path, overrides: list[str]) -> dict:
    seconds, rows = timed_run(config, steps, out, overrides)
    steps_logged = [r for r in rows if "reward" in r]
    return {"seconds": seconds, "calls": sum(r.get("sampling/rounds", 1) for r in steps_logged),
            "tokens": steps_logged[-1]["tokens/generated_total"],
            "flat": statistics.mean(r.get("sampling/flat_share_trained", 0) for r in steps_logged),
            "correct": statistics.mean(r.get("rewards/math.correctness/mean", 0) for r in steps_logged)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "quickstart.yaml")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--oversample", type=int, default=3)
    parser.add_argument("--max-rounds", type=int, default=2, help="the oversampled runs' sampling.max_rounds")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model (a smoke test)")
    a = parser.parse_args()
    ways = {"one call a round": [],
            f"oversample {a.oversample}": ["--sampling.oversample", str(a.oversample),
                                           "--sampling.max_rounds", str(a.max_rounds)]}
    results: dict[str, list[dict]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory() as tmp:
        base: list[str] = []
        if a.tiny:
            from grpo_core.testing import make_tiny_model

            base = ["--model.id", str(make_tiny_model(Path(tmp) / "model")), "--max_completion_length", "8",
                    "--rewards", "length.soft_overlong(max_length=8, cache=4):1.0", "--sampling.metric", "total"]
        for k, seed in enumerate(a.seeds):
            for name in list(ways)[::1 if k % 2 == 0 else -1]:
                r = one_run(a.config, a.steps, Path(tmp) / f"{k}-{len(results[name])}",
                            [*base, "--seed", str(seed), *ways[name]])
                results[name].append(r)
                print(f"seed {seed} {name:18s} {r['seconds']:7.1f} s  {r['seconds'] / a.steps:5.1f} s/step  "
                      f"generate calls {r['calls']:3.0f}  completion tokens {r['tokens']:6.0f}  "
                      f"flat share trained {r['flat']:.2f}  correctness trained {r['correct']:.2f}", flush=True)
    plain, over = (results[name] for name in ways)
    ratio = [o["seconds"] / p["seconds"] for p, o in zip(plain, over)]
    tokens = [o["tokens"] / p["tokens"] for p, o in zip(plain, over)]
    print(f"\n{a.steps} steps per run, seeds {a.seeds}: oversample {a.oversample} (max_rounds {a.max_rounds}) / "
          f"one call a round: seconds {statistics.mean(ratio):.3f}x (per seed {', '.join(f'{x:.3f}' for x in ratio)}), "
          f"completion tokens {statistics.mean(tokens):.2f}x, flat share trained "
          f"{statistics.mean(o['flat'] for o in over):.2f} vs {statistics.mean(p['flat'] for p in plain):.2f}")


if __name__ == "__main__":
    main()
