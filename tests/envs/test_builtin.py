"""The built-in environments of grpo-rewards-code, without a model: the python
tool runs the model's program in the code sandbox (never in this process) and
shows what it printed; guess_number answers higher/lower/correct and scores the
game; the guess_number dataset deals secrets reproducibly."""

from __future__ import annotations

import pytest

from grpo_rewards_code.environments import GuessNumber, guess_number, load_guess_number, python


@pytest.fixture(scope="module")
def interpreter():
    tool = python(timeout=2.0, max_calls=50)()
    tool.reset()
    return tool


@pytest.mark.parametrize("code, shown", [
    ("print(6 * 7)", "42"),
    ("import math\nprint(math.comb(5, 2))", "10"),
    ("import sys\nprint(sys.flags.no_site)", "1"),  # python -S in the sandbox (this process has site: 0)
    ("x = 1", "(no output: print what you need)"),
    ("", "error: give the program as a non-empty string in 'code'."),
    (42, "error: give the program as a non-empty string in 'code'."),
])
def test_the_python_tool_shows_what_the_program_printed(interpreter, code, shown):
    assert interpreter.python(code) == shown


def test_an_error_is_shown_as_the_program_would_show_it(interpreter):
    shown = interpreter.python("print('before')\n1 / 0")
    assert shown.startswith("before\nTraceback (most recent call last):\n")
    assert 'File "<program>", line 2' in shown and shown.endswith("ZeroDivisionError: division by zero")
    assert shown.count("  File ") == 1  # the sandbox harness's own frame is left out


def test_a_program_that_runs_too_long_is_stopped(interpreter):
    assert interpreter.python("print('start', flush=True)\nwhile True: pass") == "start\nerror: stopped after 2 s (time limit)"


def test_output_is_cut_and_calls_are_limited_per_rollout():
    tool = python(max_calls=2, max_output_chars=10)()
    tool.reset()
    assert tool.python("print('x' * 25)") == "xxxxxxxxxx\n... (15 more characters)"
    assert tool.python("print(1)") == "1"
    assert tool.python("print(2)") == "error: no calls left (at most 2 per answer); answer now."
    assert [code for code, _ in tool.calls] == ["print('x' * 25)", "print(1)", "print(2)"]
    tool.reset()  # the next rollout starts afresh
    assert tool.python("print(3)") == "3"


@pytest.mark.parametrize("params, message", [
    ({"timeout": 0}, "timeout=0"),
    ({"max_calls": 0}, "max_calls (0) and max_output_chars (1000) must be at least 1"),
    ({"sandbox": "docker"}, "sandbox='docker': choose one of"),
])
def test_bad_python_parameters_fail_when_bound(params, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        python(**params)


def test_guess_number_a_game_found_by_bisection():
    game = guess_number(max_guesses=5)()
    game.reset(secret=37, low=1, high=100, question="...", answer="37")  # TRL passes the whole row
    assert [game.guess(n) for n in (50, 25, 37)] == ["lower", "higher", "correct"]
    assert game.get_reward() == 1.0
    assert game.guess(37) == "correct: you already found it (37); give your final answer."
    assert game.guesses == [50, 25, 37]


def test_guess_number_refuses_guesses_past_the_limit_and_scores_0():
    game = GuessNumber(max_guesses=2)
    game.reset(secret=100)
    assert [game.guess(n) for n in (50, "75", 99)] == ["higher", "higher", "no guesses left (at most 2); the game is over."]
    assert game.get_reward() == 0.0
    game.reset(secret=100)  # a fresh game
    assert game.guess(100.0) == "correct" and game.get_reward() == 1.0


@pytest.mark.parametrize("bad", ["fifty", True, 2.5, None, [50]])
def test_guess_number_answers_a_malformed_guess_without_counting_it(bad):
    game = GuessNumber()
    game.reset(secret=3, low=1, high=10)
    assert game.guess(bad) == "error: guess a whole number between 1 and 10."
    assert game.guesses == []


def test_guess_number_rejects_a_bad_limit():
    with pytest.raises(ValueError, match="max_guesses=0: give a whole number of guesses >= 1"):
        guess_number(max_guesses=0)


def test_the_guess_number_dataset_is_reproducible_and_in_range():
    rows = load_guess_number("train", size=50, low=1, high=100, seed=0)
    assert rows.column_names == ["question", "secret", "low", "high", "answer"]
    assert all(1 <= s <= 100 for s in rows["secret"]) and rows["answer"] == [str(s) for s in rows["secret"]]
    assert rows["question"][0].startswith("I am thinking of a whole number between 1 and 100.")
    assert load_guess_number("train", size=50, seed=0)["secret"] == rows["secret"]
    assert load_guess_number("test", size=50, seed=0)["secret"] != rows["secret"]
    assert load_guess_number(size=3, low=10, high=10)["secret"] == [10, 10, 10]  # one possible secret
    with pytest.raises(ValueError, match="need size >= 1 and low <= high"):
        load_guess_number(size=3, low=5, high=4)


def test_a_registered_environment_goes_to_a_bare_trl_trainer(tool_model, tmp_path, register_plugin):
    """The factory grpo resolves is exactly what TRL's environment_factory takes."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    import grpo_core
    import grpo_rewards_code

    register_plugin(grpo_rewards_code, name="code")
    env = grpo_core.get_environment("guess_number", max_guesses=3)
    rows = Dataset.from_dict({"prompt": [[{"role": "user", "content": "Guess."}]], "secret": [4]})
    trainer = GRPOTrainer(model=str(tool_model), args=GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True,
                                                                  per_device_train_batch_size=2, num_generations=2),
                          train_dataset=rows, environment_factory=env.factory)
    assert trainer.reward_func_names == ["GuessNumber"]  # TRL's own name; grpo train logs it as guess_number
    assert [t.__name__ for t in trainer.tools] == ["guess"]
