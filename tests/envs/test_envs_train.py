"""Two steps of `grpo train` with each built-in environment on the tiny tool model.

The policy is scripted (tests/envs/conftest.py): it writes well-formed tool calls
and reads the tool results back from its context. TRL runs the rest as in a real
run: the environment's reset, tool execution, the next turn, rewards, the update.
An answer can only be right when the tool's result reached the next turn.
"""

from __future__ import annotations

import pytest

from grpo_core.testing import scripted_policy

from .conftest import COMMON, BinarySearchPolicy, PythonPolicy, RoutedPolicy, metrics, write_config


def train_python(grpo, tool_tokenizer, tmp_path, extra: str = ""):
    """Two steps with the python tool and the scripted PythonPolicy; the policy and the output dir."""
    config = write_config(tmp_path / "python.yaml", COMMON + """
dataset: {name: toy_arithmetic, system_prompt: plain}
environment: python(timeout=10.0)
rewards: [math.correctness]
max_completion_length: 128
""" + extra)
    policy = PythonPolicy()
    out = tmp_path / "out"
    with scripted_policy(tool_tokenizer, policy):
        code, stdout, stderr = grpo("train", config, "--output_dir", out)
    assert code == 0, stdout + stderr
    return policy, out


def test_python_environment_runs_the_model_code_and_shows_it_the_result(grpo, tool_tokenizer, tmp_path):
    policy, out = train_python(grpo, tool_tokenizer, tmp_path)
    steps = metrics(out)
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:
        assert r["tools/call_frequency"] == 1.0  # one python call per completion
        assert r["tools/failure_frequency"] == 0.0
        assert r["rewards/math.correctness/mean"] == 1.0  # "Answer: 42" / "Answer: 1024": read from the tool
    shown = [c for c in policy.contexts if "<tool_response>" in c]
    assert any("<tool_response>\n42\n</tool_response>" in c for c in shown)
    assert any("<tool_response>\n1024\n</tool_response>" in c for c in shown)


def test_guess_number_takes_several_turns_and_scores_itself(grpo, tool_tokenizer, tmp_path, monkeypatch):
    import torch

    from grpo_core.trainer.trainer import GrpoTrainer

    config = write_config(tmp_path / "guess.yaml", COMMON + """
dataset: {name: toy_guess}
environment: guess_number(max_guesses=5)
max_completion_length: 512
""")
    turns, threads = [], set()
    sample = GrpoTrainer._generate_single_turn

    def counted(self, prompt_ids, *args, **kwargs):
        turns.append(len(prompt_ids))
        return sample(self, prompt_ids, *args, **kwargs)

    monkeypatch.setattr(GrpoTrainer, "_generate_single_turn", counted)
    policy = BinarySearchPolicy()

    def play(context):
        threads.add(torch.get_num_threads())  # inside generate: under GrpoTrainer's sampling context
        return policy(context)

    out = tmp_path / "out"
    with scripted_policy(tool_tokenizer, play):
        code, stdout, stderr = grpo("train", config, "--output_dir", out, "--model.generation_threads", "1")
    assert code == 0, stdout + stderr
    assert "grpo check: skipped" in stdout + stderr
    # every turn samples through GrpoTrainer: the first for all 4 completions, then one per tool round for
    # those that called a tool (secret 37 answers after its 3rd result, secret 100 after its 6th)
    assert turns == [4, 4, 4, 4, 2, 2, 2] * 2
    assert threads == {1}  # model.generation_threads on tool turns too
    for r in metrics(out):
        # secret 37: 50 lower, 25 higher, 37 correct (3 calls, found: 1.0); secret 100: 50, 75, 88, 94, 97
        # higher, then 99 refused (6 calls, not found within 5: 0.0). Two completions each: 18 calls / 4.
        assert r["tools/call_frequency"] == pytest.approx(4.5)
        assert r["rewards/guess_number/mean"] == 0.5
        assert r["reward"] == 0.5
    assert any("<tool_response>\nlower\n</tool_response>" in c for c in policy.contexts)
    assert "environment: guess_number(max_guesses=5)" in (out / "config.yaml").read_text()


def test_a_mapping_picks_each_rows_environment_by_its_environment_column(grpo, tool_tokenizer, tmp_path):
    config = write_config(tmp_path / "mixed.yaml", COMMON + """
dataset: {name: toy_mixed, system_prompt: plain}
environment: {math: python, game: "guess_number(max_guesses=5):2.0"}
rewards: [math.correctness]
max_completion_length: 256
""")
    policy = RoutedPolicy()
    out = tmp_path / "out"
    with scripted_policy(tool_tokenizer, policy):
        code, stdout, stderr = grpo("train", config, "--output_dir", out)
    assert code == 0, stdout + stderr
    for r in metrics(out):
        # the arithmetic row: one python call; the game (secret 37): 50, 25, 37. Two completions each: 8 / 4
        assert r["tools/call_frequency"] == 2.0
        assert r["rewards/guess_number/mean"] == 1.0  # scored on the game rows only (None elsewhere)
        assert r["rewards/math.correctness/mean"] == 0.5  # "Answer: 42"; "The number is 37." has no answer: 0
        assert r["reward"] == 1.5  # arithmetic rows 1.0 + nothing; game rows 0.0 + 2.0 x 1.0 (its weight)
    # each row is offered only its own environment's tools
    assert all('"name": "guess"' not in c for c in policy.python.contexts)
    assert all('"name": "python"' not in c for c in policy.game.contexts)


def test_dynamic_sampling_generates_fresh_environment_rollouts_until_the_rounds_run_out(grpo, tool_tokenizer,
                                                                                         tmp_path):
    from grpo_core.trainer import rollout_log

    _, out = train_python(grpo, tool_tokenizer, tmp_path, "sampling: {dynamic: {max_rounds: 2}}\n")
    # the scripted policy is always right: every group is flat, so each step makes both rounds
    # (2 groups each), drops 2 groups and trains 2 flat ones
    for r in metrics(out):
        assert (r["sampling/rounds"], r["sampling/groups_generated"], r["sampling/groups_dropped"]) == (2, 4, 2)
        assert r["sampling/flat_share_trained"] == 1.0
    log = rollout_log.read(out).to_pylist()
    # the second round's completions are environment rollouts too: the tool ran in every one
    assert {r["round"] for r in log} == {0, 1} and len(log) == 2 * 2 * 4
    assert all(r["tool_calls"] for r in log)
