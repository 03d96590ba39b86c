"""`grpo eval` scores what training trained: the same prompts (system prompt and the
training split's few-shot examples) and the same sampling settings."""

from __future__ import annotations

import yaml

from grpo_core.commands.eval import eval_sampling
from grpo_core.config.load import load_config
from grpo_core.run.prepare import build_datasets, plan, prepare


def test_eval_prompts_and_sampling_equal_trainings(installed_plugins, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({
        "model": {"id": "unused"},
        "dataset": {"name": "arithmetic", "params": {"size": 20, "level": 1}, "eval_split": "test",
                    "eval_params": {"size": 8}, "system_prompt": "plain", "few_shot": 2},
        "rewards": ["math.correctness"], "temperature": 0.7, "top_p": 0.9, "top_k": 5, "min_p": 0.1,
        "repetition_penalty": 1.2, "max_completion_length": 48, "seed": 3,
        "chat_template_kwargs": {"enable_thinking": False}, "report_to": []}))
    cfg = load_config(path)
    train, _ = build_datasets(cfg)
    held = prepare(cfg, check=False, eval_split="test").eval_ds.select(range(4))  # as grpo eval builds them
    assert len(held) == 4 and len(train) == 18  # 2 rows became the few-shot examples
    shared = train[0]["prompt"][:-1]  # system prompt + 2 few-shot (user, assistant) turns
    assert [m["role"] for m in shared] == ["system", "user", "assistant", "user", "assistant"]
    for row in held:
        assert row["prompt"][:-1] == shared and row["prompt"][-1] == {"role": "user", "content": row["question"]}
    args = plan(cfg, train.column_names, device="cpu")[-1].args
    sampled = eval_sampling(cfg, args, "cpu", samples=4)
    assert {k: sampled[k] for k in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                     "max_new_tokens", "seed", "chat_template_kwargs", "do_sample")} == {
        "temperature": 0.7, "top_p": 0.9, "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.2,
        "max_new_tokens": 48, "seed": 3, "chat_template_kwargs": {"enable_thinking": False}, "do_sample": True}
    assert (args.temperature, args.top_k, args.min_p, args.repetition_penalty) == (0.7, 5, 0.1, 1.2)
    assert eval_sampling(cfg, args, "cpu", samples=1)["do_sample"] is False  # one completion: greedy
