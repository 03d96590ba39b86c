"""Rewards from the user's own code: a file (my_rewards.py:fn) or an import path
(my_lib.rewards.fn, as TRL's reward_funcs), with every check a registered one gets."""

from __future__ import annotations

import json
import textwrap
import types

import pytest

import grpo_core
from grpo_core.cli import main
from grpo_core.errors import GrpoError, MissingColumnError, RewardParamError, SpecError

MY_REWARDS = textwrap.dedent('''
    def has_digit(completions, **kwargs):
        """1.0 when the completion holds a digit."""
        text = lambda c: c if isinstance(c, str) else c[-1]["content"]
        return [float(any(ch.isdigit() for ch in text(c))) for c in completions]

    def longer_than(completions, n: int = 3, **kwargs):
        return [float(len(c) > n) for c in completions]

    def matches(completions, answer, **kwargs):
        return [float(c == a) for c, a in zip(completions, answer)]

    NOT_A_FUNCTION = 3
''')


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A directory holding my_rewards.py and the package my_lib/rewards.py, grpo run from it."""
    (tmp_path / "my_rewards.py").write_text(MY_REWARDS)
    (tmp_path / "my_lib").mkdir()
    (tmp_path / "my_lib" / "__init__.py").write_text("")
    (tmp_path / "my_lib" / "rewards.py").write_text(MY_REWARDS.replace("> n)", ">= n)"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_file_function_with_parameters_and_a_weight(workdir):
    funcs, weights = grpo_core.compose_rewards(["my_rewards.py:has_digit:0.5", "my_rewards.py:longer_than(n=2)"])
    assert [f.__name__ for f in funcs] == ["has_digit", "longer_than"] and weights == [0.5, 1.0]
    # "a1": digit, length 2 > 2 no; "abc": no digit, 3 > 2 yes
    assert funcs[0](completions=["a1", "abc"]) == [1.0, 0.0]
    assert funcs[1](completions=["a1", "abc"]) == [0.0, 1.0]
    assert str(grpo_core.parse_spec("my_rewards.py:longer_than(n=2):0.5")) == "my_rewards.py:longer_than(n=2):0.5"


def test_an_import_path_as_trl_writes_it(workdir):
    funcs, _ = grpo_core.compose_rewards(["my_lib.rewards.longer_than(n=3):2"])
    assert funcs[0](completions=["abc", "ab"]) == [1.0, 0.0]  # this copy counts len >= n: 3 >= 3


def test_a_registered_name_wins_over_an_import_path(workdir, register_plugin):
    mod = types.ModuleType("shadow")
    mod.register_rewards = grpo_core.hookimpl(
        lambda register: register("my_lib.rewards.has_digit", lambda completions, **kw: [7.0] * len(completions)))
    register_plugin(mod, name="shadow")
    funcs, _ = grpo_core.compose_rewards(["my_lib.rewards.has_digit"])
    assert funcs[0](completions=["1"]) == [7.0]


def test_local_rewards_get_the_checks_registered_ones_get(workdir):
    with pytest.raises(RewardParamError, match="n"):
        grpo_core.compose_rewards(["my_rewards.py:longer_than(n='three')"])
    with pytest.raises(RewardParamError, match="nope"):
        grpo_core.compose_rewards(["my_rewards.py:longer_than(nope=1)"])
    funcs, _ = grpo_core.compose_rewards(["my_rewards.py:matches"])
    assert funcs[0].required_columns == ("answer",)
    with pytest.raises(MissingColumnError, match="answer"):
        grpo_core.check_columns(["question", "prompt"], funcs, "dataset 'toy'")


@pytest.mark.parametrize("spec, message", [
    ("nothere.py:f", "no file nothere.py (looked in"),
    ("my_rewards.py:has_digits", "has no function 'has_digits'; its functions: has_digit, longer_than, matches"),
    ("my_rewards.py:NOT_A_FUNCTION", "is a int, not a function"),
    ("my_lib.rewards.nope", "Nor is it a function to import"),
    ("no_such_lib.rewards.fn", "no module 'no_such_lib.rewards' to import"),
])
def test_bad_local_references_are_clear_errors(workdir, spec, message):
    with pytest.raises(GrpoError) as info:
        grpo_core.compose_rewards([spec])
    assert message in str(info.value)


def test_a_typo_of_a_registered_name_suggests_it_and_imports_nothing(workdir, register_plugin):
    mod = types.ModuleType("acme_mod")
    mod.register_rewards = grpo_core.hookimpl(lambda register: register("acme.length", lambda completions, **kw: []))
    register_plugin(mod, name="acme")
    with pytest.raises(GrpoError, match="Closest registered: acme.length"):
        grpo_core.compose_rewards(["acme.lenght"])


def test_the_syntax_stays_unambiguous_next_to_name_weight():
    p = grpo_core.parse_spec("dir/my_rewards.py:has_digit(n=1):0.5 when math.correctness >= 1")
    assert (p.name, p.params, p.weight, str(p.when)) == ("dir/my_rewards.py:has_digit", {"n": 1}, 0.5,
                                                          "math.correctness >= 1")
    with pytest.raises(SpecError, match="weight 'two' .* is not a number"):
        grpo_core.parse_spec("math.correctness:two")


def test_grpo_score_takes_a_local_reward(workdir, capsys):
    (workdir / "c.jsonl").write_text("".join(json.dumps({"completion": c}) + "\n" for c in ["a1", "b", "c2", "d"]))
    assert main(["score", "--rewards", "my_rewards.py:has_digit:2", "--input", "c.jsonl", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rewards"][0]["reward"] == "has_digit" and out["total"]["mean"] == 1.0  # (2 + 0 + 2 + 0) / 4
