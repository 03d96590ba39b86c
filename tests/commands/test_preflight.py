"""Preflight's verdict: dead when every group's rewards are equal, ok when they vary;
advice names the culprit. Completions are really sampled from a tiny model."""

from __future__ import annotations

import types

import pytest

import grpo_core
from grpo_core.checks import preflight
from grpo_core.trainer.generation import Completion, generate


def strict_tags(completions, **kwargs):
    """1.0 only for a perfect tag layout: a random model never produces one."""
    return [float(grpo_core.completion_text(c).startswith("<think>")) for c in completions]


def length(completions, **kwargs):
    return [float(len(grpo_core.completion_text(c))) for c in completions]


def extracting(completions, answer, log_metric=None, log_extra=None, **kwargs):
    found = [t if t.strip().isdigit() else None for t in map(grpo_core.completion_text, completions)]
    if log_metric and found:
        log_metric("toy.extract/no_answer", sum(f is None for f in found) / len(found))
    if log_extra:
        log_extra("toy.extract/answer", [f or "" for f in found])
    return [float(f == a) for f, a in zip(found, answer)]


@pytest.fixture
def toy(register_plugin):
    mod = types.ModuleType("preflight_toy")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("toy.strict", strict_tags)
        register("toy.length", length)
        register("toy.extract", extracting)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="toy")


@pytest.fixture(scope="module")
def sampled(tiny_model):
    from grpo_core.trainer.generation import load_policy

    model, tok = load_policy(str(tiny_model))
    prompts = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(4)]
    groups = generate(model, tok, prompts, n=4, max_new_tokens=12, temperature=1.0, seed=0)
    return prompts, [{"answer": str(2 * i)} for i in range(4)], groups


def test_zero_spread_setup_is_dead(toy, sampled):
    prompts, rows, groups = sampled
    funcs, weights = grpo_core.compose_rewards(["toy.strict", "toy.extract"])
    report = preflight.analyze(funcs, weights, prompts, rows, groups, max_tokens=12, temperature=1.0)
    assert report.flat_share == 1.0
    assert report.verdict == "dead" and report.exit_code == 1
    assert report.advice[0].startswith("100% of groups have identical rewards")
    assert any(a.startswith("toy.strict gave 0 to every completion") for a in report.advice)
    # the extractor found no number in random text: 100% extraction failures, reported
    assert report.extraction_failures == {"toy.extract": 1.0}
    assert report.samples[0]["extracted"] == {"toy.extract/answer": ""}
    text = preflight.format_report(report)
    assert "verdict: DEAD" in text and "answer-extraction failures (toy.extract): 100%" in text


def test_setup_with_spread_is_ok(toy, sampled):
    prompts, rows, groups = sampled
    lengths = [[len(c.text) for c in g] for g in groups]
    assert all(len(set(g)) > 1 for g in lengths), "sampling should vary lengths within each group"
    funcs, weights = grpo_core.compose_rewards(["toy.strict", "toy.length:0.1"])
    report = preflight.analyze(funcs, weights, prompts, rows, groups, max_tokens=12)
    assert report.flat_share == 0.0
    assert report.verdict == "ok" and report.exit_code == 0
    assert report.flat_share_by_reward == {"toy.strict": 1.0, "toy.length": 0.0}
    length_stats = report.rewards[1]
    flat = [len(c.text) for g in groups for c in g]
    assert length_stats["mean"] == pytest.approx(sum(flat) / len(flat))


def test_truncation_and_partial_flatness_are_reported(toy):
    def c(text, trunc):
        return Completion(text, 12, trunc)

    groups = [[c("aa", True), c("aa", True)], [c("a", True), c("abc", False)]]
    prompts = [[{"role": "user", "content": "q1"}], [{"role": "user", "content": "q2"}]]
    funcs, weights = grpo_core.compose_rewards(["toy.length"])
    report = preflight.analyze(funcs, weights, prompts, [{}, {}], groups, max_tokens=12)
    assert report.flat_share == 0.5 and report.verdict == "weak"
    assert report.truncation_rate == 0.75
    assert any("75% of completions hit max_completion_length" in a for a in report.advice)
