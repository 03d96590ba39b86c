"""`trl grpo` configs as they are, local rewards, gating and reward models, through
`grpo train` on a tiny model."""

from __future__ import annotations

import json
import math
import textwrap

import pytest
import yaml

from grpo_core.config.load import load_config
from grpo_core.errors import ConfigError

from .test_train_cli import step_records

MY_REWARDS = textwrap.dedent('''
    def has_digit(completions, **kwargs):
        """1.0 when the completion holds a digit."""
        return [float(any(ch.isdigit() for ch in c[-1]["content"])) for c in completions]
''')

# TRL's documented `trl grpo --config` shape (its GRPO docs and examples/cli_configs),
# with the model and the dataset swapped for local tiny ones
TRL_CONFIG = """
model_name_or_path: {model}
dtype: float32
attn_implementation: eager
use_peft: true
lora_r: 4
lora_alpha: 8
lora_target_modules: [q_proj, v_proj]
dataset_name: data.jsonl
dataset_train_split: train
reward_funcs: [think_format_reward, accuracy_reward, my_rewards.has_digit]
reward_weights: [0.5, 1.0, 0.2]
learning_rate: 1.0e-5
per_device_train_batch_size: 4
num_generations: 4
max_completion_length: 8
max_steps: 2
gradient_checkpointing: false
report_to: none
"""


@pytest.fixture
def trl_dir(tmp_path, monkeypatch, tiny_model):
    """A working directory with TRL-format data (prompt messages, solution) and my_rewards.py."""
    rows = [{"prompt": [{"role": "user", "content": f"What is double {i}?"}], "solution": str(2 * i)} for i in range(16)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "my_rewards.py").write_text(MY_REWARDS)
    (tmp_path / "my_rewards_pkg_marker").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "trl.yaml").write_text(TRL_CONFIG.format(model=tiny_model))
    return tmp_path


def test_a_trl_grpo_config_trains_unchanged(grpo, trl_dir):
    # TRL's accuracy_reward (math-verify) pays '23 + 1' for a gold of 24, a sum the model left
    # undone: the check stops the run on it, naming the reward, the probe and the way past it
    code, out, err = grpo("trl.yaml", model=False, out=trl_dir / "out")
    assert code == 2 and "--no-check skips" in err
    assert "unevaluated" in out and "FAIL accuracy_reward, a correctness reward, pays unevaluated" in out
    assert "think_format_reward" not in out.split("FAIL", 1)[1]  # TRL's format reward is not blamed
    assert not (trl_dir / "out" / "adapter").exists()
    code, out, err = grpo("trl.yaml", "--no-check", model=False, out=trl_dir / "out")
    assert code == 0, err
    resolved = yaml.safe_load((trl_dir / "out" / "config.yaml").read_text())
    assert resolved["lora"]["r"] == 4 and resolved["lora"]["target_modules"] == ["q_proj", "v_proj"]
    assert resolved["lora"]["lora_dropout"] == 0.05  # TRL's default, not grpo's
    assert resolved["dataset"] == {"name": "trl", "params": {"dataset_name": "data.jsonl"}, "split": "train"}
    assert resolved["rewards"] == ["trl.rewards.think_format_reward:0.5", "trl.rewards.accuracy_reward:1",
                                   "my_rewards.has_digit:0.2"]
    steps = step_records(trl_dir / "out" / "metrics.jsonl")
    assert len(steps) == 2
    for name in ("think_format_reward", "accuracy_reward", "has_digit"):  # TRL's own metric names
        assert f"rewards/{name}/mean" in steps[0]
    assert (trl_dir / "out" / "adapter" / "adapter_config.json").is_file()


def test_math_correctness_takes_accuracy_rewards_place_in_a_trl_config(installed_plugins, grpo, trl_dir):
    # the fix the check names: TRL's solution column is also the gold answer grpo's rewards read
    text = (trl_dir / "trl.yaml").read_text().replace("accuracy_reward,", "math.correctness,")
    (trl_dir / "fixed.yaml").write_text(text)
    code, out, err = grpo("fixed.yaml", model=False, out=trl_dir / "out")
    assert code == 0, err
    steps = step_records(trl_dir / "out" / "metrics.jsonl")
    assert len(steps) == 2 and "rewards/math.correctness/mean" in steps[0]


def test_trl_flags_on_the_command_line(trl_dir, tiny_model):
    cfg = load_config(None, ["--model_name_or_path", str(tiny_model), "--dataset_name", "data.jsonl",
                             "--reward_funcs", "accuracy_reward", "my_rewards.has_digit", "--use_peft",
                             "--lora_r", "8", "--learning_rate", "1e-5"])
    assert cfg.model.id == str(tiny_model) and cfg.lora["r"] == 8 and cfg.lora["lora_alpha"] == 32
    assert [str(spec) for spec in cfg.stages[0].rewards] == ["trl.rewards.accuracy_reward:1", "my_rewards.has_digit:1"]
    assert cfg.cli == {"learning_rate": 1e-5}  # GRPOConfig's, typed as its field (a float) when read


@pytest.mark.parametrize("extra, both", [
    ({"model": {"id": "x"}}, "'model_name_or_path' (TRL's name) and 'model.id' (grpo's)"),
    ({"lora": {"r": 8}}, "'use_peft' (TRL's name) and 'lora' (grpo's)"),
    ({"dataset": {"name": "toy"}}, "'dataset_name' (TRL's name) and 'dataset' (grpo's)"),
    ({"rewards": ["test.digits"]}, "'reward_funcs' (TRL's name) and 'rewards' (grpo's)"),
])
def test_setting_one_thing_both_ways_is_an_error_naming_both(trl_dir, toy_plugin, extra, both):
    data = {**yaml.safe_load((trl_dir / "trl.yaml").read_text()), **extra}
    with pytest.raises(ConfigError) as info:
        load_config(None, data=data)
    assert both in str(info.value)


def test_trl_meanings_of_peft_quantization_and_the_test_split(trl_dir, tiny_model):
    base = {"model_name_or_path": str(tiny_model), "dataset_name": "data.jsonl", "reward_funcs": ["my_rewards.has_digit"]}
    assert load_config(None, data={**base, "lora_r": 8}).lora is None  # lora_* without use_peft: TRL ignores them
    cfg = load_config(None, data={**base, "eval_strategy": "steps", "dataset_test_split": "validation"})
    assert (cfg.dataset.split, cfg.dataset.eval_split) == ("train", "validation")
    assert load_config(None, data=base).dataset.eval_split is None  # eval_strategy "no": no eval set
    pytest.importorskip("torch")
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is None:
        with pytest.raises(ConfigError, match="needs bitsandbytes and a CUDA GPU: pip install bitsandbytes"):
            load_config(None, data={**base, "load_in_4bit": True})


def test_a_local_reward_in_a_grpo_config_is_recorded_as_written(grpo, trl_dir, tiny_model):
    cfg = trl_dir / "own.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8}, "dataset": {"name": "toy"},
        "rewards": ["my_rewards.py:has_digit:0.5", "test.short"], "max_steps": 1, "per_device_train_batch_size": 4,
        "num_generations": 4, "max_completion_length": 8, "gradient_checkpointing": False, "report_to": []}))
    code, out, err = grpo(cfg, out=trl_dir / "run")
    assert code == 0, err
    resolved = yaml.safe_load((trl_dir / "run" / "config.yaml").read_text())
    assert resolved["rewards"] == ["my_rewards.py:has_digit:0.5", "test.short:1"]
    assert "rewards/has_digit/mean" in step_records(trl_dir / "run" / "metrics.jsonl")[0]


# ------------------------------------------------------------------ gating + normalize_then_sum, end to end


def test_gating_under_normalize_then_sum_gives_trls_advantages(grpo, tmp_path, monkeypatch):
    from trl import GRPOTrainer

    seen = {"rewards": [], "advantages": []}
    calc, gen = GRPOTrainer._calculate_rewards, GRPOTrainer._generate_and_score_completions

    def calculate(self, *a, **k):
        out = calc(self, *a, **k)
        seen["rewards"].append(out.detach().clone())
        return out

    def generate(self, *a, **k):
        out = gen(self, *a, **k)
        seen["advantages"].append(out["advantages"].detach().clone())
        return out

    monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", calculate)
    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", generate)
    cfg = tmp_path / "gated.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8}, "dataset": {"name": "toy"},
        "rewards": ["test.digits:1", "test.short(max_chars=40):0.5 when test.digits > 0.2"],
        "multi_objective_aggregation": "normalize_then_sum", "max_steps": 2, "per_device_train_batch_size": 4,
        "num_generations": 4, "max_completion_length": 8, "gradient_checkpointing": False, "report_to": [],
        "temperature": 1.0, "seed": 0}))
    code, out, err = grpo(cfg, "--no-check")  # test.short pays empty completions: a probe would say so
    assert code == 0, err
    assert len(seen["rewards"]) == 2
    for rewards, advantages in zip(seen["rewards"], seen["advantages"]):
        digits, gated = rewards[:, 0].tolist(), rewards[:, 1].tolist()
        for d, g in zip(digits, gated):
            if not d > 0.2:
                assert g == 0.0  # the gate did not hold: the gated reward counts 0
        assert advantages.tolist() == pytest.approx(_normalize_then_sum(rewards.tolist(), [1.0, 0.5], 4), abs=1e-4)
    steps = step_records(tmp_path / "out" / "metrics.jsonl")
    assert "rewards/test.short/mean" in steps[0] and "rewards/test.digits/mean" in steps[0]


def _std(values: list[float]) -> float:
    """Unbiased standard deviation, as TRL's nanstd."""
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _normalize_then_sum(rows: list[list[float]], weights: list[float], group: int) -> list[float]:
    """TRL's normalize_then_sum, by hand: each reward normalised within its group,
    the weighted sum, then normalised over the batch."""
    totals = []
    for start in range(0, len(rows), group):
        block = rows[start:start + group]
        per = []
        for k, w in enumerate(weights):
            col = [r[k] for r in block]
            m, s = sum(col) / len(col), _std(col)
            per.append([w * (v - m) / (s + 1e-4) for v in col])
        totals += [sum(p[i] for p in per) for i in range(len(block))]
    m, s = sum(totals) / len(totals), _std(totals)
    return [(t - m) / (s + 1e-4) for t in totals]


# ------------------------------------------------------------------ reward models


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    """A tiny random Qwen2 sequence classifier (1 label) with the test tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForSequenceClassification

    from grpo_core.testing import make_tokenizer

    path = tmp_path_factory.mktemp("rm") / "classifier"
    tokenizer = make_tokenizer()
    torch.manual_seed(0)
    model = Qwen2ForSequenceClassification(Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, num_labels=1, pad_token_id=tokenizer.pad_token_id))
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_the_classifier_scores_prompt_and_completion_like_the_model_alone(tiny_classifier):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    import grpo_core

    funcs, _ = grpo_core.compose_rewards([f"model.classifier(id={str(tiny_classifier)!r}, batch_size=2)"])
    prompts = [[{"role": "user", "content": q}] for q in ("What is 2 + 2?", "Name a colour.", "Hi")]
    completions = [[{"role": "assistant", "content": a}] for a in ("4", "A rather long answer: blue", "Hello there")]
    scores = funcs[0](prompts=prompts, completions=completions)
    # the reference: each conversation rendered with the chat template, scored alone (no padding)
    tok = AutoTokenizer.from_pretrained(tiny_classifier)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_classifier).eval()
    expected = []
    with torch.inference_mode():
        for p, c in zip(prompts, completions):
            text = tok.apply_chat_template(p + c, tokenize=False)
            expected.append(model(**tok(text, return_tensors="pt", add_special_tokens=False)).logits[0, 0].item())
    assert scores == pytest.approx(expected, abs=1e-5)
    assert len(set(round(s, 6) for s in scores)) == 3  # a random model still tells them apart


def test_a_reward_model_by_id_trains_and_is_logged(grpo, trl_dir, tiny_classifier):
    data = yaml.safe_load((trl_dir / "trl.yaml").read_text())
    data.update(reward_model_name_or_path=str(tiny_classifier), reward_funcs=["my_rewards.has_digit"],
                reward_weights=[1.0, 0.5], max_steps=1)
    (trl_dir / "rm.yaml").write_text(yaml.safe_dump(data))
    cfg = load_config(trl_dir / "rm.yaml")
    assert str(cfg.stages[0].rewards[0]) == f"model.classifier(id={str(tiny_classifier)!r}):1"
    code, out, err = grpo("rm.yaml", model=False, out=trl_dir / "rm-out")
    assert code == 0, err
    step = step_records(trl_dir / "rm-out" / "metrics.jsonl")[0]
    assert "rewards/model.classifier/mean" in step and "rewards/has_digit/mean" in step


def test_an_unreachable_reward_model_fails_before_training(monkeypatch):
    import grpo_core
    from grpo_core.errors import RewardParamError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RewardParamError, match="is not a local folder and HF_HUB_OFFLINE=1"):
        grpo_core.compose_rewards(["model.classifier(id='org/not-here')"])
    with pytest.raises(RewardParamError, match="needs id="):
        grpo_core.compose_rewards(["model.classifier"])
