"""A run written by hand for the view's tests: 3 steps of 2 groups of 3 completions, each
scored by a correctness reward (toy.right, weight 2) and a format reward (toy.format, weight
0.5); total = 2 * right + 0.5 * format; advantage = total - the group's mean. Its
metrics.jsonl (grpo's figures and TRL's: loss 0.1 x step, kl 0.01 x step, entropy 1.5 - 0.1 x
step, grad_norm 0.3, learning_rate 1e-5 x step, mean length, clip ratio 0; and a reward's own
figure, toy.right/no_answer), health.jsonl, config.yaml and progress.json as grpo train
writes them."""

from __future__ import annotations

import json
import re
import types
from argparse import Namespace
from pathlib import Path

import pytest

import grpo_core
from grpo_core.runfiles import rollouts as rollout_log

# (step, group, prompt, answer, [(completion, right, format)])
GROUPS = [
    (1, 0, "What is 1 + 1?", "2", [("<answer>2</answer>", 1, 1), ("2", 1, 0), ("three", 0, 0)]),
    (1, 1, "What is 2 + 1?", "3", [("<answer>4</answer>", 0, 1), ("4", 0, 0), ("", 0, 0)]),  # suspect: row 0
    (2, 0, "What is 3 + 1?", "4", [("<answer>4</answer>", 1, 1), ("<answer>5</answer>", 0, 1), ("4", 1, 0)]),
    (2, 1, "What is 4 + 1?", "5", [("5", 1, 0), ("5", 1, 0), ("5", 1, 0)]),  # flat: no spread
    (3, 0, "What is 5 + 1?", "6", [("<answer>7</answer>", 0, 1), ("7", 0, 0), ("7", 0, 0)]),  # suspect: row 0
    (3, 1, "What is 6 + 1?", "7", [("<answer>7</answer>", 1, 1), ("<answer>7</answer>", 1, 1), ("seven", 0, 0)]),
]


def rows_of(step: int) -> list[dict]:
    out = []
    for s, g, prompt, answer, items in GROUPS:
        if s != step:
            continue
        totals = [2.0 * right + 0.5 * fmt for _, right, fmt in items]
        mean = sum(totals) / len(totals)
        for (text, right, fmt), total in zip(items, totals):
            out.append({"step": s, "stage": "main", "round": 0, "group": g, "prompt_index": g, "prompt": prompt,
                        "completion": text, "tokens": len(text), "truncated": False, "tool_calls": 0,
                        "reward/toy.right": float(right), "reward/toy.format": float(fmt), "total": total,
                        "advantage": total - mean, "extra/toy.right/answer": re.sub("</?answer>", "", text) or None,
                        "answer": answer})
    return out


def make_run(root: Path, steps=(1, 2, 3), finished: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(f"rewards:\n- toy.right:2.0\n- toy.format:0.5\nmax_steps: {max(steps)}\n")
    lines = []
    for step in steps:
        rows = rows_of(step)
        rollout_log.write(root / rollout_log.FOLDER, step, rows)
        record = {"step": step, "stage": "main", "stage_step": step,
                  "reward": sum(r["total"] for r in rows) / len(rows), "reward_std": 1.0,
                  "rewards/toy.right/mean": sum(r["reward/toy.right"] for r in rows) / len(rows),
                  "rewards/toy.format/mean": sum(r["reward/toy.format"] for r in rows) / len(rows),
                  "frac_reward_zero_std": 0.5 if step == 2 else 0.0, "tokens/generated": float(10 * step),
                  "tokens/teaching_share": 0.5, "time": 1.0, "loss": 0.1 * step, "kl": 0.01 * step,
                  "entropy": 1.5 - 0.1 * step, "grad_norm": 0.3, "learning_rate": 1e-5 * step,
                  "completions/mean_length": sum(r["tokens"] for r in rows) / len(rows),
                  "clip_ratio/region_mean": 0.0, "toy.right/no_answer": 0.0}
        if step in (1, 3):
            record["eval/accuracy"] = {1: 0.25, 3: 0.5}[step]
        lines.append(json.dumps(record))
    (root / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (root / "health.jsonl").write_text(json.dumps({"step": 3, "stage": "main", "check": "flat",
                                                   "message": "mean reward moved by 0.01 over 3 steps"}) + "\n")
    if finished:
        (root / "adapter").mkdir(exist_ok=True)
        (root / "progress.json").write_text(json.dumps({"stages": {"main": {
            "done": True, "steps": max(steps), "final": str(root / "adapter")}}}, indent=2) + "\n")
    return root


@pytest.fixture
def toy_rewards(register_plugin):
    mod = types.ModuleType("view_test_plugin")

    def right(completions, answer, **kw):
        return [float(a in grpo_core.completion_text(c)) for c, a in zip(completions, answer)]

    def fmt(completions, **kw):
        return [float("<answer>" in grpo_core.completion_text(c)) for c in completions]

    @grpo_core.hookimpl
    def register_rewards(register):
        register("toy.right", right, correctness=True)
        register("toy.format", fmt)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="view_test_plugin")


@pytest.fixture
def serve_runs(toy_rewards):
    """``serve_runs(*dirs, token=None)`` -> the base URL of ``grpo view`` on them, in a thread."""
    from grpo_core.commands.view import build
    from grpo_core.serve.server import Background

    servers = []

    def start(*dirs: Path, token: str | None = None) -> str:
        server = Background(build(Namespace(runs=list(dirs), token=token)))
        servers.append(server)
        return server.__enter__()

    yield start
    for server in servers:
        server.__exit__(None, None, None)
