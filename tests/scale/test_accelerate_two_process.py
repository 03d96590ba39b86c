"""`grpo train` under `accelerate launch` with 2 CPU processes (gloo): plugins load
in every process, each process scores rewards on its own slice, and one set of
outputs is written by the main process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..core.fakedist import make_dist

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = """
import os
from grpo_core import hookimpl, completion_text

def rank_marker(completions, **kwargs):
    # one line per call: which process scored how many completions
    with open(os.path.join(os.environ["GRPO_TEST_MARKS"], f"rank{os.environ.get('RANK', '0')}.log"), "a") as fh:
        fh.write(f"{len(completions)}\\n")
    return [float(len(completion_text(c))) for c in completions]

@hookimpl
def register_rewards(register):
    register("marks.rank", rank_marker)
"""

# a reward in a plain file, no package: each process imports it itself
LOCAL = """
import os

with open(os.path.join(os.environ["GRPO_TEST_MARKS"], f"import-rank{os.environ.get('RANK', '0')}.log"), "a") as fh:
    fh.write(f"{os.getpid()}\\n")

def brevity(completions, **kwargs):
    return [1.0 / (1 + len(c[-1]["content"])) for c in completions]
"""


def test_two_cpu_processes_train_score_and_write_once(tiny_model, tmp_path):
    site, marks, out = tmp_path / "site", tmp_path / "marks", tmp_path / "out"
    marks.mkdir()
    make_dist(site, "grpo-marks", {"marks": "grpo_marks"}, {"grpo_marks": PLUGIN})
    (tmp_path / "my_rewards.py").write_text(LOCAL)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8},
        "dataset": {"name": "arithmetic", "params": {"size": 64, "level": 1}, "system_prompt": "plain"},
        "rewards": ["marks.rank:0.1", "length.ideal(target=20, unit='chars')", "my_rewards.py:brevity:0.1"],
        "max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
        "gradient_checkpointing": False, "save_strategy": "no", "report_to": [], "seed": 0,
        "output_dir": str(out),
    }))
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               GRPO_PLUGINS="grpo-marks,grpo-datasets,grpo-rewards-format", GRPO_TEST_MARKS=str(marks),
               OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
         str(ROOT / "examples" / "accelerate" / "cpu-2proc.yaml"), "-m", "grpo_core", "train", str(cfg),
         "--no-check"],  # marks.rank records every call it gets: only training's calls here
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-12000:]
    # both processes loaded the plugin and scored their own 4 completions at each of the 2 steps
    assert sorted(p.name for p in marks.iterdir()) == ["import-rank0.log", "import-rank1.log", "rank0.log", "rank1.log"]
    pids = {(marks / f"import-rank{r}.log").read_text().split()[0] for r in (0, 1)}
    assert len(pids) == 2  # the local reward file was imported by each process itself
    for log in marks.glob("rank*.log"):  # (empty calls are the parameter probe when rewards are bound)
        assert [n for n in log.read_text().split() if n != "0"] == ["4", "4"], log.name
    # one set of outputs, written once
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x]
    assert [s["step"] for s in steps] == [1, 2]
    assert "rewards/marks.rank/mean" in steps[0] and "rewards/brevity/mean" in steps[0]
    assert (out / "rewards.png").is_file() and (out / "adapter" / "adapter_config.json").is_file()
    assert proc.stdout.count("step 1/2") == 1


PARITY = """
import os
from grpo_core import hookimpl, completion_text

def parity(completions, question, **kwargs):
    # flat on even questions, a spread on odd ones; each call's batch size is written per process
    with open(os.path.join(os.environ["GRPO_TEST_MARKS"], f"calls{os.environ.get('RANK', '0')}.log"), "a") as fh:
        fh.write(f"{len(completions)}\\n")
    out = []
    for c, q in zip(completions, question):
        n = int(q.split()[2])
        out.append(0.5 if n % 2 == 0 else sum(map(ord, completion_text(c))) % 97 / 97)
    return out

@hookimpl
def register_rewards(register):
    register("marks.parity", parity)
"""

TOY = """
from datasets import Dataset
from grpo_core import hookimpl

def toy(split="train", size=32):
    return Dataset.from_dict({"question": [f"What is {i} + 1?" for i in range(size)],
                              "answer": [str(i + 1) for i in range(size)]})

@hookimpl
def register_datasets(register):
    register("toy2", toy)
"""


@pytest.mark.parametrize("oversample", [1, 2])
def test_two_processes_take_the_same_dynamic_sampling_decision(tiny_model, tmp_path, oversample):
    """Each process holds one group a step; a round ends only when both have a group with a
    spread, so both make the same number of rounds (else the gathers would hang). With
    oversample 2 each process scores 2 groups a round, in one call."""
    site, marks, out = tmp_path / "site", tmp_path / "marks", tmp_path / "out"
    marks.mkdir()
    make_dist(site, "grpo-marks", {"marks": "grpo_marks"}, {"grpo_marks": PARITY + TOY})
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8},
        "dataset": {"name": "toy2"}, "rewards": ["marks.parity"],
        "sampling": {"dynamic": True, "max_rounds": 8, "oversample": oversample},
        "max_steps": 3, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
        "gradient_checkpointing": False, "save_strategy": "no", "report_to": [], "seed": 0, "output_dir": str(out),
    }))
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               GRPO_PLUGINS="grpo-marks", GRPO_TEST_MARKS=str(marks), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
         str(ROOT / "examples" / "accelerate" / "cpu-2proc.yaml"), "-m", "grpo_core", "train", str(cfg), "--no-check"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-12000:]
    calls = [[n for n in (marks / f"calls{r}.log").read_text().split() if n != "0"] for r in (0, 1)]
    assert calls[0] == calls[1] and set(calls[0]) == {str(4 * oversample)}  # the same rounds, one call each
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x]
    assert [s["sampling/flat_share_trained"] for s in steps] == [0.0, 0.0, 0.0]
    assert sum(s["sampling/rounds"] for s in steps) == len(calls[0]) > 3  # one scoring call per round; some step redrew
    assert all(s["sampling/groups_generated"] == 2 * oversample * s["sampling/rounds"] for s in steps)
    from grpo_core.trainer import rollout_log

    log = rollout_log.read(out).to_pylist()  # the main process wrote both processes' completions
    assert len(log) == 4 * 2 * oversample * len(calls[0])
    for step in {r["step"] for r in log}:  # each process trained one group of its own share of each round
        trained = sorted((r["round"], r["group"]) for r in log if r["step"] == step and r["trained"])
        assert len(trained) == 2 * 4 and {g // oversample for _, g in trained} == {0, 1}


SPY = """
import json
import os

import torch
from grpo_core import hookimpl
from grpo_core.trainer.methods.base import Advantages


class Spy:
    # grpo's advantages, with each gathered row's index carried to the loss, where each process writes
    # the indices of the rows it trains on
    def rows(self, scored):
        n = len(scored.advantages)
        return Advantages(scored.advantages, extra={"row": torch.arange(n, dtype=torch.float32)})

    def tokens(self, rows, extra, entropies, mask):
        with open(os.path.join(os.environ["GRPO_TEST_MARKS"], f"rows{os.environ.get('RANK', '0')}.log"), "a") as fh:
            fh.write(json.dumps(sorted(int(i) for i in extra["row"].tolist())) + "\\n")
        return rows.to(entropies.device).unsqueeze(1).expand_as(entropies)


@hookimpl
def register_advantages(register):
    register("marks.spy", lambda: Spy())
"""


def test_each_process_trains_on_its_own_rows_of_the_gathered_batch(tiny_model, tmp_path):
    """The learning method sees every process's rows (gathered, process 0's first) and each
    process keeps its own: process 1 trains rows 4-7 of each step's 8, not process 0's 0-3
    (the run above cannot tell: both processes score, step and write alike either way)."""
    site, marks, out = tmp_path / "site", tmp_path / "marks", tmp_path / "out"
    marks.mkdir()
    make_dist(site, "grpo-marks", {"marks": "grpo_marks"}, {"grpo_marks": SPY + TOY})
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8},
        "dataset": {"name": "toy2"}, "rewards": ["length.ideal(target=20, unit='chars')"],
        "learning": {"method": "marks.spy"},
        "max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
        "gradient_checkpointing": False, "save_strategy": "no", "report_to": [], "seed": 0, "output_dir": str(out),
    }))
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               GRPO_PLUGINS="grpo-marks,grpo-rewards-format", GRPO_TEST_MARKS=str(marks), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
         str(ROOT / "examples" / "accelerate" / "cpu-2proc.yaml"), "-m", "grpo_core", "train", str(cfg), "--no-check"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-12000:]
    for rank in (0, 1):  # one loss pass a step (num_iterations 1, one micro-batch of 4)
        seen = [json.loads(line) for line in (marks / f"rows{rank}.log").read_text().splitlines()]
        assert seen == [[4 * rank, 4 * rank + 1, 4 * rank + 2, 4 * rank + 3]] * 2, (rank, seen)


@pytest.mark.parametrize("multi_stage, trained, on_disk, saves", [
    (False, True, False, False),  # a trained single stage saved already; a process that cannot see it yet still skips
    (False, True, True, False),
    (True, True, True, True),  # multi-stage: the last stage's weights go to the root, in every process
    (True, True, False, True),
    (False, False, False, True),  # nothing trained this time and no weights: the main process writes them
    (False, False, True, False),
])
def test_every_process_decides_alike_whether_the_run_saves_its_final_weights(tmp_path, multi_stage, trained,
                                                                              on_disk, saves):
    """Under ZeRO-3 or FSDP saving is a collective: a non-main process that did not yet see the
    main one's adapter/ folder and saved again would wait alone for ever."""
    from grpo_core.run.train import final_to_save

    final = tmp_path / "adapter"
    if on_disk:
        final.mkdir()
    assert final_to_save(multi_stage, trained, final) is saves
