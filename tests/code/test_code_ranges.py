"""Every code reward declares its range when it registers (``grpo check`` judges the gold
against the declared maximum, never the best a row happened to score), and its scores
on the fixture datasets stay inside it, reaching both ends."""

from __future__ import annotations

import pytest

from .fixtures import humaneval_dir, mbpp_dir

FENCE = "```"
NAMES = ["code.format", "code.runs", "code.tests"]


def test_every_registered_code_reward_declares_its_range(code_plugin):
    import grpo_core

    registered = sorted(e.name for e in grpo_core.list_rewards() if e.plugin == "code")
    assert registered == NAMES
    for name in NAMES:
        assert grpo_core.get_reward(name).range == (0.0, 1.0), name
    # all_or_nothing changes the values paid (1.0 or 0.0), not the range
    assert grpo_core.get_reward("code.tests", all_or_nothing=True).range == (0.0, 1.0)


@pytest.fixture
def rows(load, write, tmp_path):
    """The mbpp (full config, 4 rows) and humaneval (2 rows) fixtures, loaded by the adapters."""
    mbpp = load("mbpp", path=str(mbpp_dir(write, tmp_path / "mbpp")))
    humaneval = load("humaneval", path=str(humaneval_dir(write, tmp_path / "humaneval")), split="test")
    return [dict(r) for ds in (mbpp, humaneval) for r in ds]


def completions_for(gold: str) -> list[str]:
    return [
        f"{FENCE}python\n{gold}{FENCE}",  # the reference solution
        f"{FENCE}python\n{gold}raise ValueError('an example call')\n{FENCE}",  # right, then raises at top level
        "I would loop over the items.",  # no code
        f"{FENCE}python\ndef f(:\n{FENCE}",  # does not parse
    ]


# per row, for the four completions above: the gold passes every test, the top-level raise
# does not stop the tests (code.tests 1.0) but the code did not run clean (code.runs 0.0),
# prose and a syntax error score 0.0 everywhere
EXPECTED = {"code.tests": [1.0, 1.0, 0.0, 0.0], "code.runs": [1.0, 0.0, 0.0, 0.0],
            "code.format": [1.0, 1.0, 0.0, 0.0]}


def test_scores_on_the_fixture_datasets_stay_inside_the_declared_range(rows):
    import grpo_core

    assert len(rows) == 6
    completions = [c for r in rows for c in completions_for(r["answer"])]
    columns = {key: [r[key] for r in rows for _ in range(4)] for key in ("tests", "test_setup")}
    for name in NAMES:
        reward = grpo_core.get_reward(name, timeout=5.0) if name != "code.format" else grpo_core.get_reward(name)
        scores = reward(completions=completions, **columns)
        assert scores == EXPECTED[name] * 6, name
        low, high = reward.range
        assert all(low <= s <= high for s in scores)
        assert (min(scores), max(scores)) == (low, high)  # both ends are reached
