"""Every math reward declares the range it scores in (grpo check's full marks is its high end),
and scores of generated batches, with generated parameters, stay inside it."""

from __future__ import annotations

import inspect
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grpo_rewards_math
from grpo_rewards_math.rewards import RANGES, REWARDS

EXAMPLES = 150


def test_every_reward_declares_its_range(register_plugin):
    from grpo_core import get_reward

    register_plugin(grpo_rewards_math)
    assert set(RANGES) == set(REWARDS)
    assert {name: get_reward(name).range for name in REWARDS} == {
        "math.correctness": (0.0, 1.0),
        "math.numeric": (0.0, 1.0),
        "math.exact": (0.0, 1.0),
        "math.cosine": (-1.0, 1.0),  # wrong from -1.0 to -0.5, right from 0.5 to 1.0
        "math.kimi_length": (-0.5, 0.5),
    }
    # open-r1's config defaults: wrong from 0.0 (short) to -0.5 (long)
    assert get_reward("math.cosine", min_value_wrong=0.0).range == (-0.5, 1.0)
    assert get_reward("math.cosine", max_value_correct=2.0, min_value_wrong=-3).range == (-3.0, 2.0)


def test_range_functions_default_as_their_rewards_do():
    """A range function gets only the parameters a config set: its defaults must be the reward's."""
    for name, declared in RANGES.items():
        if not callable(declared):
            continue
        reward_params = inspect.signature(REWARDS[name]).parameters
        for p in inspect.signature(declared).parameters.values():
            if p.kind is not p.VAR_KEYWORD:
                assert p.default == reward_params[p.name].default, (name, p.name)


STYLES = [r"\boxed{{{}}}", "#### {}", "The final answer is ${}$.", "<answer>{}</answer>", "no answer {}"]
value = st.floats(min_value=-3, max_value=3, allow_nan=False)


@st.composite
def items(draw):
    """(completion, gold): an integer answer, right or wrong, padded to a drawn length; now
    and then a gold that cannot be read."""
    n = draw(st.integers(-1000, 1000))
    said = n + draw(st.sampled_from([0, 0, 1, -7]))
    text = draw(st.sampled_from(STYLES)).format(said) + " " * draw(st.integers(0, 3000))
    gold = draw(st.sampled_from([str(n), str(n), str(n), ""]))
    return text, gold


PARAMS = {
    "math.correctness": st.just({}),
    "math.numeric": st.fixed_dictionaries({"atol": st.floats(0, 5)}),
    "math.exact": st.just({}),
    "math.cosine": st.fixed_dictionaries(
        {"max_len": st.integers(1, 2000), "unit": st.sampled_from(["auto", "chars"])},
        optional={k: value for k in ("min_value_wrong", "max_value_wrong", "min_value_correct",
                                     "max_value_correct")},
    ),
    "math.kimi_length": st.fixed_dictionaries(
        {"unit": st.sampled_from(["auto", "chars"]), "group_by": st.sampled_from(["batch", "prompt"])}
    ),
}


def test_generated_scores_stay_inside_the_declared_range(register_plugin):
    from grpo_core import get_reward

    register_plugin(grpo_rewards_math)
    seen = {name: 0 for name in REWARDS}

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(sorted(REWARDS)).flatmap(lambda name: st.tuples(st.just(name), PARAMS[name])),
           st.lists(items(), min_size=1, max_size=8), st.booleans(), st.data())
    def check(named, batch, with_ids, data):
        name, params = named
        r = get_reward(name, **params)
        low, high = r.range
        comps, golds = [c for c, _ in batch], [g for _, g in batch]
        ids = [[0] * data.draw(st.integers(0, 3000)) for _ in comps] if with_ids else None
        prompts = [data.draw(st.sampled_from(["p1", "p2"])) for _ in comps]
        for v in r(completions=comps, answer=golds, completion_ids=ids, prompts=prompts, lower=None, upper=None):
            assert v is None or (math.isfinite(v) and low <= v <= high), (name, params, v, r.range)
            seen[name] += v is not None

    check()
    assert min(seen.values()) > 0, seen  # every reward scored something
