"""Fixtures for the training tests: toy rewards and a toy dataset registered
in-process, a tiny random model (tests/conftest.py), and ``grpo`` run in-process."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

import grpo_core

HERE = Path(__file__).parent
TINY = HERE / "tiny.yaml"


def digits(completions, **kwargs):
    """Share of characters that are digits."""
    out = []
    for c in completions:
        text = grpo_core.completion_text(c)
        out.append(sum(ch.isdigit() for ch in text) / max(len(text), 1))
    return out


def short(completions, max_chars: int = 40, **kwargs):
    """1 for an empty completion down to 0 at max_chars."""
    return [1.0 - min(len(grpo_core.completion_text(c)) / max_chars, 1.0) for c in completions]


def exact(completions, answer, **kwargs):
    """1.0 when the completion contains the gold answer; needs the 'answer' column."""
    return [1.0 if str(a) in grpo_core.completion_text(c) else 0.0 for c, a in zip(completions, answer)]


INTERRUPT = {"at_call": None, "calls": 0, "signal": "SIGINT"}


def interrupt(completions, **kwargs):
    """Sends this process INTERRUPT["signal"] (SIGINT: Ctrl-C) on call number INTERRUPT["at_call"]."""
    import os
    import signal

    if not completions:  # rewards are probed with an empty batch when bound
        return []
    if kwargs.get("trainer_state") is None:  # grpo check scores outside training: not a step
        return [0.0 for _ in completions]
    INTERRUPT["calls"] += 1
    if INTERRUPT["calls"] == INTERRUPT["at_call"]:
        os.kill(os.getpid(), getattr(signal, INTERRUPT["signal"]))
    return [0.0 for _ in completions]


def toy(split: str = "train", size: int = 32):
    """Questions 'What is i + 1?' with answers."""
    from datasets import Dataset

    return Dataset.from_dict({
        "question": [f"What is {i} + 1?" for i in range(size)],
        "answer": [str(i + 1) for i in range(size)],
    })


def toy_no_answer(split: str = "train", size: int = 32):
    from datasets import Dataset

    return Dataset.from_dict({"question": [f"Say {i}." for i in range(size)]})


def make_plugin():
    mod = types.ModuleType("train_test_plugin")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("test.digits", digits)
        register("test.short", short)
        register("test.exact", exact, correctness=True)  # (a naive one: it pays hedges)
        register("test.interrupt", interrupt)

    @grpo_core.hookimpl
    def register_datasets(register):
        register("toy", toy)
        register("toy_no_answer", toy_no_answer)

    mod.register_rewards = register_rewards
    mod.register_datasets = register_datasets
    return mod


@pytest.fixture
def toy_plugin(register_plugin):
    INTERRUPT.update(at_call=None, calls=0, signal="SIGINT")
    register_plugin(make_plugin(), name="train_test_plugin")


@pytest.fixture
def grpo(toy_plugin, tiny_model, tmp_path, capsys):
    """``grpo(*args)`` -> (exit code, stdout, stderr), in-process, with the tiny model
    and an output_dir in tmp_path unless given."""
    from grpo_core.cli import main

    def run(*args: str, model: bool = True, out: Path | None = None):
        argv = ["train", *map(str, args)]
        if model:
            argv += ["--model.id", str(tiny_model)]
        if "--output_dir" not in args:
            argv += ["--output_dir", str(out or tmp_path / "out")]
        code = main(argv)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def train(toy_plugin, tiny_model, tmp_path):
    """``train(*overrides, config=TINY, callbacks=(), resume=False, check=True, out=None)``
    -> (TrainResult, logged lines): ``grpo_core.run.train.run`` in-process with the tiny model,
    for tests that watch the trainer from callbacks (the CLI takes none)."""
    from grpo_core.config.load import load_config
    from grpo_core.run.train import run

    def go(*overrides, config: Path = TINY, callbacks=(), resume=False, check=True, out: Path | None = None):
        argv = [*map(str, overrides), "--model.id", str(tiny_model), "--output_dir", str(out or tmp_path / "out")]
        lines: list[str] = []
        result = run(load_config(config, argv), resume=resume, check=check, log=lines.append,
                     extra_callbacks=list(callbacks))
        return result, lines

    return go
