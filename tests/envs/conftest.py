"""Fixtures for the environment tests: a tiny model whose chat template renders
tools, scripted policies (a random tiny model never writes a well-formed tool call,
so the tests script what it writes and let TRL run everything else), the code and
math plugins with toy datasets registered in process, and ``grpo`` run in process."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import pytest

import grpo_core


@pytest.fixture(scope="session")
def tool_model(tmp_path_factory):
    """A tiny random Qwen2 model with TRL's Qwen2.5 chat template (renders tools;
    TRL parses its <tool_call> JSON)."""
    from grpo_core.testing import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tool-model") / "model", tools=True)


@pytest.fixture(scope="session")
def tool_tokenizer(tool_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tool_model)


# ---------------------------------------------------------------------- scripted policies


def tool_call(name: str, **arguments) -> str:
    """A tool call as the Qwen2.5 template writes one."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def tool_results(context: str) -> list[str]:
    """The tool results the model has been shown so far, in order."""
    return re.findall(r"<tool_response>\n(.*?)\n</tool_response>", context, re.S)


class PythonPolicy:
    """Asks the python tool for the question's expression, then answers with what the
    tool printed: an answer is right only if the result reached the next turn."""

    def __init__(self):
        self.contexts: list[str] = []

    def __call__(self, context: str) -> str:
        self.contexts.append(context)
        results = tool_results(context)
        if results:
            return f"Answer: {results[-1].strip()}"
        expression = re.findall(r"What is (.+?)\?", context)[-1]
        return tool_call("python", code=f"print({expression})")


class BinarySearchPolicy:
    """Plays guess-the-number by bisection, reading each answer from the context."""

    def __init__(self):
        self.contexts: list[str] = []

    def __call__(self, context: str) -> str:
        self.contexts.append(context)
        low, high = map(int, re.findall(r"between (\d+) and (\d+)", context)[-1])
        guesses = [int(g) for g in re.findall(r'"number": (\d+)', context)]
        for guess, answer in zip(guesses, tool_results(context)):
            if answer == "correct":
                return f"The number is {guess}."
            if answer.startswith("no guesses left"):
                return "I give up."
            low, high = (guess + 1, high) if answer == "higher" else (low, guess - 1)
        return tool_call("guess", number=(low + high) // 2)


class RoutedPolicy:
    """The python policy on arithmetic rows, bisection on games (by what the context offers)."""

    def __init__(self):
        self.python, self.game = PythonPolicy(), BinarySearchPolicy()

    def __call__(self, context: str) -> str:
        return (self.game if "between" in context else self.python)(context)


# ---------------------------------------------------------------------- plugins


def toy_arithmetic(split: str = "train"):
    """Two questions whose answers the python tool computes."""
    from datasets import Dataset

    return Dataset.from_dict({"question": ["What is 6 * 7?", "What is 2 ** 10?"], "answer": ["42", "1024"]})


def toy_guess(split: str = "train"):
    """Two guess-the-number games with secrets 37 and 100 (binary search: 3 and 7 guesses)."""
    from datasets import Dataset

    from grpo_rewards_code.environments import GUESS_QUESTION

    return Dataset.from_dict({"question": [GUESS_QUESTION.format(low=1, high=100)] * 2, "secret": [37, 100],
                              "low": [1, 1], "high": [100, 100], "answer": ["37", "100"]})


def toy_mixed(split: str = "train"):
    """One arithmetic row and one game, routed by the environment column."""
    from datasets import Dataset

    from grpo_rewards_code.environments import GUESS_QUESTION

    return Dataset.from_dict({"question": ["What is 6 * 7?", GUESS_QUESTION.format(low=1, high=100)],
                              "environment": ["math", "game"], "secret": [0, 37], "answer": ["42", "37"]})


def make_plugin():
    mod = types.ModuleType("envs_test_plugin")

    @grpo_core.hookimpl
    def register_datasets(register):
        register("toy_arithmetic", toy_arithmetic)
        register("toy_guess", toy_guess)
        register("toy_mixed", toy_mixed)

    mod.register_datasets = register_datasets
    return mod


@pytest.fixture
def env_plugins(register_plugin):
    """grpo-rewards-code (the environments), grpo-rewards-math and the toy datasets."""
    import grpo_rewards_code
    import grpo_rewards_math

    register_plugin(grpo_rewards_code, name="code")
    register_plugin(grpo_rewards_math, name="math")
    register_plugin(make_plugin(), name="envs_test_plugin")


@pytest.fixture
def grpo(env_plugins, tool_model, tmp_path, capsys):
    """``grpo(command, *args, model=True)`` -> (exit code, stdout, stderr), in process."""
    from grpo_core.cli import main

    def run(command: str, *args: str, model: bool | Path = True):
        argv = [command, *map(str, args)]
        if model:
            argv += ["--model.id", str(tool_model if model is True else model)]
        code = main(argv)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


# what every environment test run shares: a tiny model, 2 steps of 2 groups of 2
COMMON = """
model: {dtype: float32}
lora: {r: 4, lora_alpha: 8}
max_steps: 2
learning_rate: 1.0e-3
per_device_train_batch_size: 4
num_generations: 2
gradient_checkpointing: false
save_strategy: "no"
report_to: []
seed: 0
"""


def write_config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def metrics(out: Path) -> list[dict]:
    """The per-step records of metrics.jsonl."""
    return [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "reward" in r]
