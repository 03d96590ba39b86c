"""A short ``grpo train`` on CPU with ``judge.yesno`` beside ``math.correctness``, the judge a
real ``transformers serve``: it runs end to end, the judge's tokens and seconds are on the step
line and in metrics.jsonl, and the API key is nowhere in the run folder, the cache or the logs."""

from __future__ import annotations

import json
import re
import types

import pytest
import yaml

import grpo_core
from grpo_core.cli import main

from .conftest import LAST

KEY = "sk-e2e-never-written-7f3a9c21d4"
pytestmark = pytest.mark.timeout(900)


def toy(split: str = "train", size: int = 16):
    from datasets import Dataset

    return Dataset.from_dict({"question": [f"What is {i} + 1?" for i in range(size)],
                              "answer": [str(i + 1) for i in range(size)]})


@pytest.fixture
def plugins(register_plugin, judge_plugin):
    import grpo_rewards_math

    data = types.ModuleType("judge_train_data")
    data.register_datasets = grpo_core.hookimpl(lambda register: register("judge_toy", toy))
    register_plugin(data, name="judge_train_data")
    register_plugin(grpo_rewards_math)


def test_a_short_run_with_a_judge_beside_math_correctness(plugins, served_judge, tiny_model, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.setenv("JUDGE_E2E_KEY", KEY)
    cfg = {"model": {"dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8},
           "dataset": {"name": "judge_toy", "system_prompt": "plain"},
           "rewards": ["math.correctness:1.0",
                       {"name": "judge.yesno", "weight": 0.5,
                        "params": {"url": served_judge.url, "model": served_judge.model, "template": LAST,
                                   "api_key_env": "JUDGE_E2E_KEY", "concurrency": 4}}],
           "max_steps": 2, "learning_rate": 1.0e-3, "per_device_train_batch_size": 4, "num_generations": 4,
           "max_completion_length": 8, "gradient_checkpointing": False, "save_strategy": "no", "report_to": [],
           "seed": 0}
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "run"
    before = served_judge.chat_requests()
    code = main(["train", str(path), "--model.id", str(tiny_model), "--output_dir", str(out), "--no-check"])
    captured = capsys.readouterr()
    assert code == 0, captured.out[-3000:] + captured.err[-3000:]

    lines = [line for line in captured.out.splitlines() if line.startswith("step ")]
    assert len(lines) == 2
    for line in lines:  # e.g. "... | judge.yesno 1,136 tokens 1.2s | ..."
        assert re.search(r"\| judge\.yesno [\d,]+ tokens \d+\.\ds \|", line), line
        assert "math.correctness" in line
    steps = [json.loads(r) for r in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:
        assert r["judge.yesno/tokens"] > 0 and r["rewards/judge.yesno/seconds"] > 0
        assert 0.0 <= r["rewards/judge.yesno/mean"] <= 1.0 and "rewards/math.correctness/mean" in r
    # 4 completions a step, scored by the server (plus the first 8 questions asked twice: recheck)
    assert served_judge.chat_requests() - before == pytest.approx(sum(r["judge.yesno/requests"] for r in steps))
    assert served_judge.chat_requests() - before >= 8

    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert "JUDGE_E2E_KEY" in json.dumps(saved)  # the variable's name is kept, its value is not
    places = [p for p in (*out.rglob("*"), *(tmp_path / "judge-cache").rglob("*")) if p.is_file()]
    assert any(p.name == "answers.sqlite" for p in places)
    leaked = [str(p) for p in places if KEY.encode() in p.read_bytes()]
    assert leaked == [] and KEY not in captured.out + captured.err
    assert KEY not in served_judge.log.read_text(errors="replace")
