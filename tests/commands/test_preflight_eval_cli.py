"""`grpo preflight` and `grpo eval` end to end on tiny models, through the CLI."""

from __future__ import annotations

import json
import os
import types

import pytest
import yaml

import grpo_core
from grpo_core.cli import main


def chars(completions, **kwargs):
    return [float(len(grpo_core.completion_text(c))) for c in completions]


def odd(completions, **kwargs):
    """numpy scalars for even positions, NaN for odd ones: values a reward may return."""
    import numpy as np

    return [np.float32(len(grpo_core.completion_text(c))) if i % 2 == 0 else float("nan")
            for i, c in enumerate(completions)]


def tagged(completions, **kwargs):
    return [float(grpo_core.completion_text(c).startswith("<think>")) for c in completions]


def quiz(split: str = "train", size: int = 12):
    from datasets import Dataset

    offset = 0 if split == "train" else 100
    return Dataset.from_dict({"question": [f"What is {i + offset} + 1?" for i in range(size)],
                              "answer": [str(i + offset + 1) for i in range(size)]})


@pytest.fixture
def toy(register_plugin):
    mod = types.ModuleType("cli_toy")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("toy.chars", chars)
        register("toy.tagged", tagged)
        register("toy.odd", odd)

    @grpo_core.hookimpl
    def register_datasets(register):
        register("quiz", quiz)

    mod.register_rewards = register_rewards
    mod.register_datasets = register_datasets
    register_plugin(mod, name="toy")


def write_config(tmp_path, model, rewards, **extra):
    cfg = {"model": {"id": str(model), "dtype": "float32"}, "dataset": {"name": "quiz"},
           "rewards": rewards, "num_generations": 4, "per_device_train_batch_size": 4,
           "max_completion_length": 10, "temperature": 1.0, "seed": 0, "report_to": [], **extra}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_preflight_runs_grpo_check_first_and_stops_before_the_model(toy, tiny_model, tmp_path, capsys, monkeypatch):
    import grpo_core.config.models

    monkeypatch.setattr(grpo_core.config.models, "load", lambda *a, **k: pytest.fail("model loaded"))
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"])  # pays length: the overlong probe wins
    assert main(["preflight", str(cfg), "--prompts", "2"]) == 2
    captured = capsys.readouterr()
    assert "reward-hacking probes" in captured.out and "overlong" in captured.out
    assert "grpo check failed" in captured.err and "--no-check" in captured.err


def test_preflight_says_dead_when_every_group_scores_the_same(toy, tiny_model, tmp_path, capsys):
    cfg = write_config(tmp_path, tiny_model, ["toy.tagged"])
    assert main(["preflight", str(cfg), "--no-check", "--prompts", "3", "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "groups with zero reward spread (total): 100%" in out
    assert "verdict: DEAD" in out and "toy.tagged gave 0 to every completion" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["prompts"] == 3 and report["group_size"] == 4 and report["exit_code"] == 1


def test_preflight_ok_with_spread(toy, tiny_model, tmp_path, capsys):
    cfg = write_config(tmp_path, tiny_model, ["toy.tagged", "toy.chars:0.1"])
    assert main(["preflight", str(cfg), "--no-check", "--prompts", "3"]) == 0
    out = capsys.readouterr().out
    assert "verdict: OK" in out
    assert "groups with zero reward spread (total): 0%" in out


def test_preflight_takes_overrides_like_train(toy, tiny_model, tmp_path, capsys):
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"])
    # a reward list from the command line replaces the config's
    assert main(["preflight", str(cfg), "--no-check", "--prompts", "2", "--rewards", "toy.tagged"]) == 1
    assert main(["preflight", str(cfg), "--prompts", "2", "--rewards", "toy.nope"]) == 2
    assert "unknown reward 'toy.nope'" in capsys.readouterr().err


def test_eval_reports_base_trained_and_delta(toy, tiny_model, lora_adapter, tmp_path, capsys):
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"])
    out = tmp_path / "eval.json"
    assert main(["eval", str(cfg), "--checkpoint", str(lora_adapter), "--limit", "4",
                 "--output", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["split"] == "test" and report["prompts"] == 4 and report["greedy"] is True
    base, trained, delta = report["base"], report["trained"], report["delta"]
    assert base["toy.chars"] != trained["toy.chars"]  # the adapter really changes the model
    assert delta["toy.chars"] == pytest.approx(trained["toy.chars"] - base["toy.chars"])
    assert delta["mean_tokens"] == pytest.approx(trained["mean_tokens"] - base["mean_tokens"])
    assert base["accuracy"] is None  # no math.* reward configured
    assert "metric" in capsys.readouterr().out
    # what each model wrote, per held-out prompt (the test split: "What is 100 + 1?" ...), scored
    written = report["completions"]
    assert [w["prompt"] for w in written] == [f"What is {100 + i} + 1?" for i in range(4)]
    assert [w["answer"] for w in written] == ["101", "102", "103", "104"]
    for w in written:
        assert len(w["base"]) == len(w["trained"]) == 1  # greedy: one completion each
        for c in w["base"] + w["trained"]:
            assert c["rewards"]["toy.chars"] == len(c["text"])  # toy.chars scores the text's length
            assert 0 < c["tokens"] <= 10 and c["truncated"] == (c["tokens"] == 10)
    assert sum(len(w["trained"][0]["text"]) for w in written) / 4 == pytest.approx(trained["toy.chars"])
    assert [w["base"][0]["text"] for w in written] != [w["trained"][0]["text"] for w in written]
    # --no-base: the base model is not loaded, its figures null; the trained ones are the same
    assert main(["eval", str(cfg), "--checkpoint", str(lora_adapter), "--limit", "4", "--output", str(out),
                 "--no-base"]) == 0
    alone = json.loads(out.read_text())
    assert alone["trained"] == trained and set(alone["base"].values()) == {None}
    assert [sorted(w) for w in alone["completions"]] == [["answer", "prompt", "trained"]] * 4
    assert set(alone["delta"].values()) == {None}
    printed = capsys.readouterr().out
    assert "with the base model" not in printed and "with the trained model" in printed
    # the grpo train output directory (holding adapter/) names the same weights
    run_dir = lora_adapter.parent
    assert main(["eval", str(cfg), "--checkpoint", str(run_dir), "--limit", "4", "--no-base"]) == 0
    assert json.loads((lora_adapter / "eval.json").read_text())["trained"] == trained


def test_eval_json_keeps_each_sampled_completion_with_its_own_scores(toy, tiny_model, lora_adapter, tmp_path):
    cfg = write_config(tmp_path, tiny_model, ["toy.chars", "toy.odd"])
    out = tmp_path / "eval.json"
    assert main(["eval", str(cfg), "--checkpoint", str(lora_adapter), "--limit", "3", "--samples", "2",
                 "--no-base", "--output", str(out)]) == 0

    def strict(constant):
        raise AssertionError(f"eval.json holds {constant}, which is not JSON")

    written = json.loads(out.read_text(), parse_constant=strict)["completions"]
    assert len(written) == 3 and all(len(w["trained"]) == 2 for w in written)  # 3 prompts x 2 samples
    texts = [c["text"] for w in written for c in w["trained"]]
    assert len(set(texts)) > 1  # sampled at temperature 1: not one text repeated
    for w in written:
        for k, c in enumerate(w["trained"]):
            assert c["rewards"]["toy.chars"] == len(c["text"])  # each completion's own score
            # toy.odd: a numpy float32 of the length at even positions of the batch, NaN at odd ones (null)
            assert c["rewards"]["toy.odd"] == (len(c["text"]) if k == 0 else None)


@pytest.mark.parametrize("saved", ["adapter", "model", "final"])
def test_a_run_directory_names_the_weights_it_saved(tmp_path, saved):
    from grpo_core.trainer.generation import run_weights

    marker = "adapter_config.json" if saved == "adapter" else "config.json"
    (tmp_path / "checkpoint-2").mkdir()  # a checkpoint folder is not the run's final weights
    (tmp_path / "checkpoint-2" / "config.json").write_text("{}")
    (tmp_path / saved).mkdir()
    assert run_weights(tmp_path) == tmp_path  # an empty adapter/ or model/ is not weights
    (tmp_path / saved / marker).write_text("{}")
    assert run_weights(tmp_path) == tmp_path / saved
    assert run_weights(tmp_path / saved) == tmp_path / saved


def test_eval_rejects_a_checkpoint_of_another_base(toy, tiny_model, tmp_path, capsys):
    from grpo_core.testing import make_tiny_model

    other = make_tiny_model(tmp_path / "wide", hidden_size=64)
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"])
    assert main(["eval", str(cfg), "--checkpoint", str(other)]) == 2
    err = capsys.readouterr().err
    assert "does not match the base model" in err and "hidden_size: 64 vs base 32" in err


def test_eval_rejects_an_adapter_trained_on_another_model(toy, tiny_model, lora_adapter, tmp_path, capsys):
    from grpo_core.testing import make_tiny_model

    other = make_tiny_model(tmp_path / "other")
    cfg = write_config(tmp_path, other, ["toy.chars"])
    assert main(["eval", str(cfg), "--checkpoint", str(lora_adapter)]) == 2
    assert f"was trained on {tiny_model}" in capsys.readouterr().err


def test_eval_rejects_a_directory_with_nothing_in_it(toy, tiny_model, tmp_path, capsys):
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"])
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["eval", str(cfg), "--checkpoint", str(empty)]) == 2
    assert "holds neither an adapter" in capsys.readouterr().err


def test_eval_of_a_run_that_stopped_names_its_last_checkpoint(toy, tiny_model, tmp_path, capsys):
    # a run stopped at step 10 (non-finite gradients, a crash): checkpoints, no adapter/
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"], lora={"r": 4, "lora_alpha": 8})
    run = tmp_path / "stopped"
    for step in (2, 10, 9):  # the last by number, not by name ("checkpoint-9" > "checkpoint-10")
        (run / f"checkpoint-{step}").mkdir(parents=True)
        (run / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    assert main(["eval", str(cfg), "--checkpoint", str(run)]) == 2
    err = capsys.readouterr().err
    assert "did not finish" in err and f"--checkpoint {run / 'checkpoint-10'}" in err

    # a staged run that stopped in its second stage: the checkpoint written last, in that stage's folder
    staged = tmp_path / "staged"
    for stage, step, written in (("sft", 40, 1_000), ("rl", 7, 2_000)):
        folder = staged / stage / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text("{}")
        os.utime(folder / "trainer_state.json", (written, written))
    assert main(["eval", str(cfg), "--checkpoint", str(staged)]) == 2
    assert f"its last checkpoint is {staged / 'rl' / 'checkpoint-7'}" in capsys.readouterr().err


def test_eval_without_checkpoint_evaluates_the_finished_run_in_the_configs_output_dir(toy, tiny_model, tmp_path,
                                                                                    capsys):
    run = tmp_path / "run"
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"], output_dir=str(run), max_steps=2, save_strategy="no",
                       lora={"r": 4, "lora_alpha": 8}, learning_rate=0.05)
    assert main(["train", str(cfg), "--no-check"]) == 0
    capsys.readouterr()
    assert main(["eval", str(cfg), "--limit", "4"]) == 0
    out = capsys.readouterr().out
    assert f"eval: the trained model is {run / 'adapter'} (the finished run in the config's output_dir, 2 steps)" \
        in out
    report = json.loads((run / "adapter" / "eval.json").read_text())
    assert report["checkpoint"] == str(run / "adapter") and report["prompts"] == 4
    # the same figures as naming the weights: the run's adapter, not the base model again
    assert main(["eval", str(cfg), "--checkpoint", str(run / "adapter"), "--limit", "4", "--no-base",
                 "--output", str(tmp_path / "named.json")]) == 0
    assert json.loads((tmp_path / "named.json").read_text())["trained"] == report["trained"]


def test_eval_without_checkpoint_names_the_directory_and_the_fix_when_no_run_finished(toy, tiny_model, tmp_path,
                                                                                    capsys):
    run = tmp_path / "run"
    cfg = write_config(tmp_path, tiny_model, ["toy.chars"], output_dir=str(run))

    def refused() -> str:
        assert main(["eval", str(cfg), "--limit", "4"]) == 2
        err = capsys.readouterr().err
        assert f"the config's output_dir, {run}, but it holds none (" in err
        assert f"grpo train {cfg}" in err and "--checkpoint DIR" in err and "Traceback" not in err
        return err

    assert f"{run} does not exist" in refused()
    run.mkdir()
    assert "(no grpo train run)" in refused()
    (run / "checkpoint-3").mkdir()  # a run stopped after step 3: checkpoints, no final weights
    (run / "checkpoint-3" / "trainer_state.json").write_text('{"global_step": 3}')
    assert "stage 'main' did not finish: its last checkpoint is checkpoint-3" in refused()
    (run / "progress.json").write_text('{"stages": {"main": {"done": true, "steps": 4}}}')
    assert "its final weights (adapter/ or model/) are missing" in refused()


def test_eval_names_the_first_three_misses_and_counts_only_scored_completions(capsys):
    from grpo_core.commands.eval import _per_prompt, _say_misses

    def judge(completions, **kwargs):
        return []

    judge.correctness, judge.range = True, (0, 2)  # full marks are 2, the top of the declared range
    rows = [{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}], "answer": i + 1} for i in range(6)]
    scores = [2.0, 1.0, None, 0.0, 1.9999, 0.0]  # full marks, three misses, no opinion, a miss by a hair
    written = [[{"text": f"line one\nsays {i}", "rewards": {"judge": s}}] for i, s in enumerate(scores)]
    _say_misses([judge], rows, written)
    out = capsys.readouterr().out.splitlines()
    # 5 scored (None left out), 4 below 2; the first three shown, folded onto one line each
    assert out[0].startswith("the trained model missed full marks on judge in 4 of 5 scored completions; the first 3")
    assert out[1:] == ["  'What is 1 + 1?' (answer '2') -> 'line one says 1'",
                       "  'What is 3 + 1?' (answer '4') -> 'line one says 3'",
                       "  'What is 4 + 1?' (answer '5') -> 'line one says 4'"]
    # eval.json's rows: the answer as text whatever the dataset's type, what each model wrote under its label
    import numpy as np

    items = _per_prompt([{"prompt": "What is 41 + 1?", "answer": np.int64(42)}, {"prompt": "p"}],
                        {"trained": [["a"], ["b"]]})
    assert items == [{"prompt": "What is 41 + 1?", "answer": "42", "trained": ["a"]}, {"prompt": "p", "trained": ["b"]}]
    json.dumps(items)
