"""The judge rewards' settings are checked when the reward is bound, before any request: each
bad value named with its fix; a pasted API key refused without being echoed; the defaults
and the url forms a user writes."""

from __future__ import annotations

import re

import pytest
import yaml

import grpo_core
from grpo_core import RewardParamError
from grpo_rewards_judge.client import chat_url
from grpo_rewards_judge.rewards import pairs


@pytest.mark.parametrize("given, expected", [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/chat/completions"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/chat/completions"),
    ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1/chat/completions"),
    ("https://api.example.com/v1/chat/completions", "https://api.example.com/v1/chat/completions"),
    ("https://example.com/openai/v1beta", "https://example.com/openai/v1beta/chat/completions"),
    ("http://localhost:11434", "http://localhost:11434/v1/chat/completions"),  # Ollama
])
def test_the_url_forms_a_user_writes(given, expected):
    assert chat_url(given) == expected


def bind(name, **params):
    return grpo_core.get_reward(name, **params)


@pytest.mark.parametrize("name, params, says", [
    ("judge.yesno", {"url": "127.0.0.1:8000"}, "url must be the judge server's http(s) address"),
    ("judge.yesno", {"url": "http://user:pw@127.0.0.1/v1"}, "put the key in an environment variable"),
    ("judge.yesno", {"concurrency": 0}, "concurrency must be from 1 to 256, got 0"),
    ("judge.yesno", {"timeout": 0.0}, "timeout must be from"),
    ("judge.yesno", {"temperature": 3.0}, "temperature must be from 0 to 2, got 3.0"),
    ("judge.yesno", {"question": " "}, "judge.yesno needs question="),
    ("judge.yesno", {"template": "{completion} {answer}"}, "template field {answer} is not one this reward fills"),
    ("judge.yesno", {"template": "Is it right? {prompt}"}, "template never shows the judge {completion}"),
    ("judge.yesno", {"template": "{completion.__class__}"}, "template field {completion.__class__} is not one"),
    ("judge.yesno", {"template": "{completion"}, "template is not format text"),
    ("judge.score", {}, "judge.score needs rubric="),
    ("judge.score", {"rubric": "ok?", "scale": 0}, "scale must be from 1 to 1000, got 0"),
    ("judge.rubric", {}, "judge.rubric needs items=[...]"),
    ("judge.rubric", {"items": ["ok", ""]}, "judge.rubric needs items=[...]"),
])
def test_a_bad_setting_is_refused_when_bound_naming_it(judge_plugin, name, params, says):
    with pytest.raises(RewardParamError) as err:
        bind(name, **params)
    assert says in str(err.value)


@pytest.mark.parametrize("params, says", [
    ({"template": "{first} only"}, "template never shows the judge {second}"),
    ({"opponents": 0}, "opponents must be from 1 to 64, got 0"),
    ({"url": "ftp://x"}, "url must be the judge server's http(s) address"),
])
def test_a_group_reward_refuses_a_bad_setting_at_its_first_group(judge_plugin, params, says):
    # grpo calls a group reward only on whole groups, never on the empty batch it binds with:
    # its settings are checked when the first group comes (grpo check's, before training)
    reward = bind("judge.pairwise", **params)
    with pytest.raises(ValueError, match=re.escape(says)):
        reward(["Answer: 1", "Answer: 2"], group_size=2)


def test_a_misspelt_setting_names_the_closest(judge_plugin):
    with pytest.raises(RewardParamError, match="has no parameter 'concurency' \\(did you mean 'concurrency'\\?\\)"):
        bind("judge.yesno", concurency=4)


def test_an_api_key_pasted_where_the_variable_name_goes_is_refused(judge_plugin):
    key = "sk-proj-Zq8thisIsNotARealKey0123456789"
    # refused before anything is written or sent (grpo's own message repeats the parameters given,
    # on the terminal of the user who pasted it; this one does not add it again)
    for pasted in (key, "abcdEFGH1234ijklMNOP5678"):  # the second: no dash, letters and digits
        with pytest.raises(RewardParamError) as err:
            bind("judge.yesno", api_key_env=pasted)
        said = str(err.value).split("rejects its parameters: ", 1)[1]
        assert said.startswith("api_key_env names the environment variable") and pasted not in said


def test_binding_makes_no_request(judge_plugin):
    # nothing listens on port 9 (discard): a request would fail; binding validates only
    assert bind("judge.yesno", url="http://127.0.0.1:9/v1")([]) == []


def test_the_settings_are_listed_with_their_defaults(judge_plugin):
    from grpo_core.commands.rewards import describe_parameters
    from grpo_core.plugin import registry

    params, columns = describe_parameters(registry.rewards().get("judge.score").obj)
    text = "\n".join(params)
    for shown in ("rubric", "scale", "url", "'http://127.0.0.1:8000/v1'", "api_key_env", "'OPENAI_API_KEY'",
                  "concurrency", "cache", "'default'", "temperature", "0.0"):
        assert shown in text
    assert columns == []  # the reference column is optional: a setting, not a required column


@pytest.mark.parametrize("size, opponents, expected", [
    (2, 3, [(0, 1), (1, 0)]),
    (3, 3, [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]),
    (4, 1, [(0, 1), (1, 0), (0, 3), (3, 0), (1, 2), (2, 1), (2, 3), (3, 2)]),  # a ring: each meets 2
])
def test_pairwise_compares_each_with_its_next_opponents_in_both_orders(size, opponents, expected):
    assert pairs(size, opponents) == expected
    assert len(pairs(22, 3)) == 22 * 3 * 2  # the contract suite's group of 22: 132 requests, not 462


def test_a_dataset_column_named_like_a_setting_does_not_replace_it(judge_plugin):
    # every grpo dataset has a 'question' column, handed to rewards beside their parameters
    from grpo_rewards_judge.testing import FakeJudge

    users = []
    with FakeJudge(lambda request: users.append(request.user) or "yes") as judge:
        default = bind("judge.yesno", url=judge.url, cache="off", recheck=0)
        assert default(["Answer: 4"], question=["What is 2 + 2?"], reference=["x"]) == [1.0]
        assert users[-1].endswith("Does the response answer the question correctly? Answer with one word: yes or no.")
        assert "['What is 2 + 2?']" not in users[-1] and "<reference>" not in users[-1]  # reference= stays 'answer'
        given = bind("judge.yesno", url=judge.url, cache="off", recheck=0, question="Is it polite?")
        given(["Answer: 4"], question=["What is 2 + 2?"])
        assert users[-1].endswith("Is it polite? Answer with one word: yes or no.")


def test_cache_off_as_yaml_reads_it_is_no_cache(judge_plugin, tmp_path):
    from grpo_rewards_judge.testing import FakeJudge, exact

    spec = yaml.safe_load("params: {cache: off}")["params"]  # YAML 1.1: off is false
    assert spec == {"cache": False}
    with FakeJudge(exact) as judge:
        func = bind("judge.yesno", url=judge.url, recheck=0, **spec)
        func(["Answer: 4"], answer=["4"])
        func(["Answer: 4"], answer=["4"])
        assert judge.requests == 2  # asked twice: nothing kept
    assert not (tmp_path / "judge-cache").exists()
