"""Dynamic sampling's reference log-probs, once for the batch trained against once per
round: the quickstart's run (SmolLM2-135M, LoRA, beta 0.02, dynamic sampling on
correctness, 3 rounds at most) for ``--steps`` steps, alternating the two ways, ``--runs``
each, in this one process. ``per-round`` is how it was done before: TRL runs the reference
model on every round it scores, dropped groups included, and the merged batch carries the
picked rows' values. Both sample and train the same thing, so the check compares every
step's logged rewards and rounds (they must be equal) and KL (equal up to rounding).
The figure is training wall time (held-out accuracy, grpo check and checkpoints off),
best of the runs, and the ratio once / per-round, with the rows the reference model ran on.

    python bench/dynamic_reference.py [--steps 6] [--runs 2] [--config examples/quickstart.yaml]
    python bench/dynamic_reference.py --tiny      # a tiny random model: a smoke test
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("reward", "kl", "sampling/rounds")


@contextlib.contextmanager
def per_round():
    """The old way: every round scored with the reference model, nothing computed after."""
    from grpo_core.trainer.trainer import GrpoTrainer

    score, reference = GrpoTrainer.score_round, GrpoTrainer.reference_logps
    GrpoTrainer.score_round = lambda self, inputs, round_=0, reference=True: score(self, inputs, round_, True)
    GrpoTrainer.reference_logps = lambda self, batch: None
    try:
        yield
    finally:
        GrpoTrainer.score_round, GrpoTrainer.reference_logps = score, reference


@contextlib.contextmanager
def counting(rows: list[int]):
    """Counts the rows each reference forward runs on (the adapters off, or TRL's ref_model)."""
    from grpo_core.trainer.trainer import GrpoTrainer

    original = GrpoTrainer._get_per_token_logps_and_entropies

    def counted(self, model, ids, *args, **kwargs):
        if model is self.ref_model or _adapters_off(self.accelerator.unwrap_model(self.model)):
            rows.append(ids.shape[0])
        return original(self, model, ids, *args, **kwargs)

    GrpoTrainer._get_per_token_logps_and_entropies = counted
    try:
        yield
    finally:
        GrpoTrainer._get_per_token_logps_and_entropies = original


def _adapters_off(model) -> bool:
    """True inside peft's disable_adapter / TRL's use_adapter(None)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [m for m in model.modules() if isinstance(m, BaseTunerLayer)]
    return bool(layers) and all(layer.disable_adapters for layer in layers)


def timed_run(config: Path, steps: int, out: Path, overrides: list[str]) -> tuple[float, list[dict]]:
    """``grpo train``'s run of ``config`` for ``steps`` steps, quietly (held-out accuracy,
    grpo check and checkpoints off): its training wall time and its metrics.jsonl rows."""
    from grpo_core.config.load import load_config
    from grpo_core.run.train import run

    argv = ["--max_steps", str(steps), "--output_dir", str(out), "--heldout.enabled", "false",
            "--save_strategy", "no", *overrides]
    t0 = time.perf_counter()
    result = run(load_config(config, argv), check=False, log=lambda line: None, overwrite=True,
                 stream=io.StringIO())
    seconds = time.perf_counter() - t0
    assert result.global_step == steps, result
    return seconds, [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def one_run(config: Path, steps: int, out: Path, overrides: list[str], old: bool) -> dict:
    rows: list[int] = []
    with counting(rows), (per_round() if old else contextlib.nullcontext()):
        seconds, logged = timed_run(config, steps, out, overrides)
    figures = [{k: r.get(k) for k in FIGURES} for r in logged if "reward" in r]
    return {"seconds": seconds, "rows": sum(rows), "figures": figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "quickstart.yaml")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="a tiny random model (a smoke test)")
    a = parser.parse_args()
    overrides: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if a.tiny:
            from grpo_core.testing import make_tiny_model

            overrides = ["--model.id", str(make_tiny_model(Path(tmp) / "model")), "--max_completion_length", "8",
                         "--rewards", "length.soft_overlong(max_length=8, cache=4):1.0",
                         "--sampling.metric", "total"]
        results = {"once": [], "per-round": []}
        for k in range(a.runs):
            for name in ("per-round", "once"):
                r = one_run(a.config, a.steps, Path(tmp) / f"{name}-{k}", overrides, old=name == "per-round")
                results[name].append(r)
                print(f"run {k + 1}/{a.runs} {name:9s} {r['seconds']:7.1f} s  reference rows {r['rows']}", flush=True)
    first = results["once"][0]["figures"]
    runs = [r["figures"] for rs in results.values() for r in rs]
    same = all([(f["reward"], f["sampling/rounds"]) for f in fs] == [(f["reward"], f["sampling/rounds"]) for f in first]
               for fs in runs)
    # the reference forward sees the rows in another batch (other padding): its log-probs, so the KL, agree
    # up to rounding
    kl_gap = max(abs((f["kl"] or 0) - (g["kl"] or 0)) for fs in runs for f, g in zip(fs, first))
    best = {name: min(r["seconds"] for r in rs) for name, rs in results.items()}
    print(f"\n{a.steps} steps, best of {a.runs}: once {best['once']:.1f} s, per round {best['per-round']:.1f} s, "
          f"ratio once/per-round {best['once'] / best['per-round']:.3f}; reference rows "
          f"{results['once'][0]['rows']} vs {results['per-round'][0]['rows']}; "
          f"rounds {sum(f['sampling/rounds'] or 1 for f in results['once'][0]['figures']):.0f}; "
          f"every step's reward and rounds equal: {same}, KL within {kl_gap:.1e}")
    if not same:
        raise SystemExit("the two ways logged different figures: not the same run")


if __name__ == "__main__":
    main()
