"""How fast `grpo view` answers on a long run: a generated run of 2,000 steps (its rollout log:
8 groups of 8 completions a step, 128,000 completions; metrics.jsonl with rewards, held-out
accuracy, the per-token figures and TRL's loss, KL, entropy, lengths, clip ratios; a health event), served on loopback as `grpo view` serves
it, then timed over HTTP, as a browser asks:

- the first page (the run: curves and the step list), from a server just started;
- the rollouts filtered by a reward range, by --suspect, by --where, by a step range: the
  first time (the log read from disk, unless the background read got there first) and again;
- one step's page and one group's page.

    .venv/bin/python bench/view.py                  # 2000 steps
    .venv/bin/python bench/view.py --steps 200 --keep /tmp/run   # smaller; keep the run

Prints seconds per request; the targets are under 1 s for the first page and for a filter.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import urllib.request
from argparse import Namespace
from pathlib import Path

from grpo_core.trainer import rollout_log


def make_run(root: Path, steps: int, groups: int = 8, size: int = 8, seed: int = 0) -> None:
    """A finished run's files, as grpo train writes them, with made-up contents."""
    rnd = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text("rewards:\n- math.correctness:2.0\n- format.xml_strict:0.5\nmax_steps: "
                                      f"{steps}\n")
    (root / "adapter").mkdir(exist_ok=True)
    with open(root / "metrics.jsonl", "w") as metrics:
        for step in range(1, steps + 1):
            p = min(0.9, 0.1 + step / steps)
            recs = []
            for g in range(groups):
                q = rnd.randint(1, 999)
                for _ in range(size):
                    right = rnd.random() < p
                    answer = str(q + 1) if right else str(rnd.randint(1, 999))
                    fmt = rnd.choice([0.0, 0.5, 1.0])
                    text = "Let me think step by step. " * rnd.randint(1, 30) + f"<answer>{answer}</answer>"
                    recs.append({"step": step, "stage": "main", "round": 0, "group": g, "prompt_index": q,
                                 "prompt": f"What is {q} + 1?", "completion": text, "tokens": len(text) // 4,
                                 "truncated": rnd.random() < 0.05, "tool_calls": 0,
                                 "reward/math.correctness": float(right), "reward/format.xml_strict": fmt,
                                 "total": 2 * float(right) + 0.5 * fmt, "advantage": rnd.uniform(-1, 1),
                                 "extra/math.correctness/answer": answer, "answer": str(q + 1)})
            rollout_log.write(root / "rollouts", step, recs)
            record = {"step": step, "stage": "main", "stage_step": step, "reward": sum(r["total"] for r in recs) / len(recs),
                      "reward_std": 0.5, "rewards/math.correctness/mean": p, "rewards/format.xml_strict/mean": 0.5,
                      "frac_reward_zero_std": rnd.uniform(0, 0.4), "tokens/generated": float(sum(r["tokens"] for r in recs)),
                      "tokens/teaching_share": rnd.uniform(0.5, 0.9), "time": 0,
                      # TRL's figures, as a real run logs them (the page draws each)
                      "loss": rnd.uniform(-0.1, 0.1), "grad_norm": rnd.uniform(0.1, 1), "learning_rate": 1e-5,
                      "kl": 0.001 * step, "entropy": rnd.uniform(0.5, 1.5), "num_tokens": 4000.0 * step,
                      "completions/mean_length": rnd.uniform(50, 200), "completions/min_length": 20.0,
                      "completions/max_length": 256.0, "completions/clipped_ratio": rnd.uniform(0, 0.2),
                      "clip_ratio/region_mean": 0.0, "clip_ratio/low_mean": 0.0, "clip_ratio/high_mean": 0.0,
                      "rewards/math.correctness/std": 0.4, "rewards/format.xml_strict/std": 0.3,
                      "rewards/math.correctness/seconds": 0.002, "step_time": rnd.uniform(5, 9), "epoch": step / steps}
            if step % 50 == 0:
                record["eval/accuracy"] = p * 0.8
            metrics.write(json.dumps(record) + "\n")
    (root / "health.jsonl").write_text(json.dumps({"step": steps // 2, "stage": "main", "check": "flat",
                                                   "message": "mean reward moved by 0.01 over 10 steps"}) + "\n")


def get(url: str) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - start, response.status, body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--keep", type=Path, default=None, help="write the run here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "run"
        if not (root / "rollouts").is_dir():
            t = time.perf_counter()
            make_run(root, args.steps)
            print(f"generated {args.steps} steps ({args.steps * 64:,} completions) in {time.perf_counter() - t:.1f} s")
        from grpo_core.commands.view import build
        from grpo_core.serve.server import Background

        t = time.perf_counter()
        app = build(Namespace(runs=[root], token=None))
        print(f"server built (the curves drawn, the log's background read started) in {time.perf_counter() - t:.2f} s")
        run = app.state.view.runs[0]
        with Background(app) as url:
            t = time.perf_counter()
            sum(range(10_000_000))
            print(f"machine: 10 million Python additions in {time.perf_counter() - t:.2f} s (the load of the shared "
                  f"cores, for comparing runs of this bench)")
            t, status, body = get(f"{url}/run/0")
            print(f"first page /run/0: {t:.3f} s (HTTP {status}, {len(body) // 1024} KiB)")
            t, status, _ = get(f"{url}/run/0")
            print(f"again: {t:.3f} s")
            mid = args.steps // 2
            t, status, body = get(f"{url}/run/0/rollouts?reward=total&low=0&high=0.5")
            print(f"first filter, at once (the log mostly unread: the page's steps are read first): {t:.3f} s "
                  f"(HTTP {status})")
            start = time.perf_counter()
            run.warmed.wait(600)
            print(f"(the whole log read in the background, and --suspect found ahead, {time.perf_counter() - start:.1f} s "
                  f"after that)")
            queries = [("reward range total 2..2.5", "reward=total&low=2&high=2.5"),
                       ("--suspect", "suspect=on"), ("--where format.xml_strict>0.5", "where=format.xml_strict%3E0.5"),
                       (f"steps {mid}-{mid + 9}, correctness 0..0", f"steps={mid}-{mid + 9}&reward=math.correctness&high=0")]
            for label, query in queries:
                first, status, body = get(f"{url}/run/0/rollouts?{query}")
                again, _, _ = get(f"{url}/run/0/rollouts?{query}")
                print(f"filter {label}: {first:.3f} s the first time, {again:.3f} s again (HTTP {status}, "
                      f"{len(body) // 1024} KiB)")
            for label, path in [("a step", f"/run/0/step/{mid}"), ("a group", f"/run/0/step/{mid}/group/3"),
                                ("two steps compared", f"/compare?a_run=0&a_step=1&b_run=0&b_step={args.steps}")]:
                t, status, _ = get(url + path)
                print(f"{label} {path}: {t:.3f} s (HTTP {status})")


if __name__ == "__main__":
    main()
