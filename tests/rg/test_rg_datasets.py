"""rg.<task> and rg.task: rows, seeding, disjoint splits, and settings refused by name."""

from __future__ import annotations

import json

import pytest

from grpo_core.errors import DatasetError, EmptyDatasetError, RewardParamError, SplitError

SMALL = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}  # a + b or a - b, digits 0-9


def test_rows_have_the_question_the_gold_as_text_and_what_the_scorer_reads(rg):
    ds = rg("rg.chain_sum", size=5, seed=0)
    assert ds.column_names == ["question", "answer", "rg_entry"] and len(ds) == 5
    row = ds[0]
    # reasoning-gym's item 0 under seed 0, worked by hand: 1663 - 5242 = -3579; - 9376 = -12955;
    # - 8961 = -21916; + 7634 = -14282
    assert row["question"] == ("State the final answer to the following arithmetic problem: "
                               "1663 - 5242 - 9376 - 8961 + 7634 =")
    assert row["answer"] == "-14282"
    carried = json.loads(row["rg_entry"])
    assert carried["task"] == "chain_sum" and carried["config"] == {}
    assert carried["entry"]["answer"] == "-14282" and carried["entry"]["question"] == row["question"]
    assert carried["entry"]["metadata"]["expression"] == "1663 - 5242 - 9376 - 8961 + 7634"


def test_settings_reach_reasoning_gyms_config_and_are_kept_in_each_row(rg):
    ds = rg("rg.chain_sum", size=40, seed=3, **SMALL)
    for row in ds:
        expression = json.loads(row["rg_entry"])["entry"]["metadata"]["expression"]
        a, op, b = expression.split()
        assert len(a) == len(b) == 1 and op in "+-"
        assert int(row["answer"]) == (int(a) + int(b) if op == "+" else int(a) - int(b))
        assert json.loads(row["rg_entry"])["config"] == SMALL


def test_the_same_seed_gives_the_same_rows_another_seed_others(rg):
    import reasoning_gym

    first = rg("rg.leg_counting", size=20, seed=7)
    again = rg("rg.leg_counting", size=20, seed=7)
    other = rg("rg.leg_counting", size=20, seed=8)
    assert first["question"] == again["question"] and first["answer"] == again["answer"]
    assert first["question"] != other["question"]
    # train row i is reasoning-gym's own item i under that seed
    own = reasoning_gym.create_dataset("leg_counting", seed=7, size=20)
    assert first["question"] == [own[i]["question"] for i in range(20)]


def test_no_test_question_is_a_train_question(rg, recwarn):
    import reasoning_gym

    from grpo_reasoning_gym.tasks import TEST_DRAWS, TEST_SEED_OFFSET

    train = rg("rg.chain_sum", size=300, seed=0, **SMALL)
    test = rg("rg.chain_sum", split="test", size=300, seed=0, **SMALL)
    assert len(test) > 0 and not set(test["question"]) & set(train["question"])
    # 200 problems exist (10 x 10 x 2): the test split is every other one the test seed draws
    # in 3000 draws, in the order drawn, each once
    seen = set(train["question"])
    made = reasoning_gym.create_dataset("chain_sum", seed=TEST_SEED_OFFSET, size=TEST_DRAWS * 300, **SMALL)
    fresh = list(dict.fromkeys(made[i]["question"] for i in range(3000) if made[i]["question"] not in seen))
    assert test["question"] == fresh and len(fresh) == 200 - len(seen)
    warned = [str(w.message) for w in recwarn if "the test split has" in str(w.message)]
    assert warned == [f"dataset 'rg.chain_sum': the test split has {len(fresh)} questions, not 300: the other "
                      f"{3000 - len(fresh)} drawn were train questions or repeats (these settings make few "
                      f"distinct problems)."]


def test_the_test_split_has_size_rows_when_the_task_has_enough_problems(rg, recwarn):
    train = rg("rg.chain_sum", size=100, seed=5, **SMALL)
    test = rg("rg.chain_sum", split="test", size=60, seed=5, **SMALL)  # train of size 60: < 60 of 200 problems
    assert len(test) == 60 and len(set(test["question"])) == 60
    assert not set(test["question"]) & set(train["question"][:60])
    assert not [w for w in recwarn if "the test split has" in str(w.message)]


def test_a_test_split_with_no_new_question_is_an_error_that_says_why(rg):
    with pytest.raises(EmptyDatasetError, match="none of 30000 test questions drawn is new: the train split "
                                                 "\\(3000 rows\\) has every one"):
        rg("rg.chain_sum", split="test", size=3000, seed=0, **SMALL)


def test_splits_slice_and_unknown_ones_are_named(rg):
    assert len(rg("rg.gcd", split="train[:10]", size=50)) == 10
    with pytest.raises(SplitError, match="has splits train, test .* not 'validation'"):
        rg("rg.gcd", split="validation", size=5)


def test_an_unknown_setting_is_refused_by_name_with_every_valid_one(rg):
    with pytest.raises(RewardParamError) as err:
        rg("rg.chain_sum", min_term=2)
    message = str(err.value)
    assert "has no parameter 'min_term' (did you mean 'min_terms'?)" in message
    assert ("min_terms=2, max_terms=6, min_digits=1, max_digits=4, allow_negation=False" in message)


def test_a_setting_of_the_wrong_type_is_refused_before_reasoning_gym_sees_it(rg):
    with pytest.raises(RewardParamError, match="parameter 'max_digits' expects int, got str 'two'"):
        rg("rg.chain_sum", max_digits="two")


def test_settings_reasoning_gym_rejects_are_an_error_with_its_reason(rg):
    with pytest.raises(DatasetError, match="max_terms must be >= min_terms"):
        rg("rg.chain_sum", min_terms=4, max_terms=3)


def test_the_loader_called_directly_refuses_unknown_settings_too():
    from grpo_reasoning_gym import TASKS, task_loader

    load = task_loader("leg_counting", TASKS["leg_counting"])
    with pytest.raises(DatasetError, match=r"leg_counting has no setting 'max_animal' \(did you mean "
                                           r"'max_animals'\?\); its settings are: min_animals=3, max_animals=10"):
        load(max_animal=3)


@pytest.mark.parametrize("params, message", [
    ({"size": 0}, "size must be a whole number from 1 to 1000000, got 0"),
    ({"seed": -1}, "seed must be a whole number from 0"),
])
def test_size_and_seed_are_checked(rg, params, message):
    with pytest.raises(DatasetError, match=message):
        rg("rg.gcd", **params)


def test_the_loaders_signature_lists_the_tasks_settings(rg):
    import inspect

    from grpo_core.plugin import registry

    sig = inspect.signature(registry.datasets().get("rg.leg_counting").obj)
    assert list(sig.parameters) == ["split", "seed", "size", "min_animals", "max_animals",
                                    "min_instances", "max_instances", "level"]
    assert sig.parameters["max_animals"].default == 10 and sig.parameters["max_animals"].annotation is int


def test_rg_task_loads_any_task_by_name_with_its_settings_in_config(rg):
    named = rg("rg.leg_counting", size=6, seed=2, max_animals=4)
    generic = rg("rg.task", task="leg_counting", size=6, seed=2, config={"max_animals": 4})
    assert named["question"] == generic["question"] and named["rg_entry"] == generic["rg_entry"]
    other = rg("rg.task", task="base_conversion", size=3)  # a task not registered by name
    assert json.loads(other[0]["rg_entry"])["task"] == "base_conversion"


@pytest.mark.parametrize("params, message", [
    ({}, "needs task=<reasoning-gym task>"),
    ({"task": "chain_sums"}, "no task 'chain_sums'. Closest: chain_sum"),
    ({"task": "countdown"}, "'countdown' is not offered: its scorer runs the model's answer through sympy"),
    ({"task": "string_insertion"}, "'string_insertion' is not offered: its scorer runs the model's answer through eval"),
    ({"task": "chain_sum", "config": {"seed": 3}}, "no setting 'seed' \\(seed and size are the dataset's own"),
    ({"task": "chain_sum", "config": {"max_term": 3}}, "no setting 'max_term' \\(did you mean 'max_terms'\\?\\)"),
])
def test_rg_task_refuses_what_it_cannot_load(rg, params, message):
    with pytest.raises(DatasetError, match=message):
        rg("rg.task", size=3, **params)


def test_rg_task_refuses_a_config_that_is_not_a_mapping(rg):
    from grpo_reasoning_gym import load_any

    with pytest.raises(RewardParamError, match="parameter 'config' expects dict | None, got list"):
        rg("rg.task", task="chain_sum", config=[1])
    with pytest.raises(DatasetError, match="config must be a mapping of the task's settings, got list"):
        load_any(task="chain_sum", config=[1])  # called directly, past grpo's parameter check


def test_levels_load_rows_of_each_curriculum_level_with_their_level_as_difficulty(rg):
    """basic_arithmetic's curriculum: num_terms levels 2, 3, 4, 5, 6 and num_digits 1, 2, 3, 4;
    level L is each knob's L-th value alone (reasoning-gym's upper_bound mode)."""
    import json

    from grpo_core.data.difficulty import of_dataset

    ds = rg("rg.basic_arithmetic", size=5, level=[2, 0])
    assert ds["level"] == [0, 0, 0, 2, 2]  # 5 rows over 2 levels: 3 + 2, in level order
    config = {r["level"]: json.loads(r["rg_entry"])["config"] for r in ds}
    assert {k: config[0][k] for k in ("min_terms", "max_terms", "min_digits", "max_digits")} == \
        {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}
    assert {k: config[2][k] for k in ("min_terms", "max_terms", "min_digits", "max_digits")} == \
        {"min_terms": 4, "max_terms": 4, "min_digits": 3, "max_digits": 3}
    assert config[2]["operators"] == config[0]["operators"]  # what the curriculum does not move passes through
    test = rg("rg.basic_arithmetic", split="test", size=5, level=[0, 2])
    assert test["level"] == [0, 0, 0, 2, 2] and not set(test["question"]) & set(ds["question"])
    knob = of_dataset("rg.basic_arithmetic")  # what sampling.prompts: frontier steers by
    assert (knob.column, knob.param) == ("level", "level") and of_dataset("rg.task") == knob
    assert "level" not in rg("rg.basic_arithmetic", size=2).column_names  # without level: as before
    assert rg("rg.task", task="gcd", size=4, level=[0, 1])["level"] == [0, 0, 1, 1]


@pytest.mark.parametrize("params, message", [
    ({"level": 5}, "level must be a curriculum level from 0 to 4"),
    ({"level": [1, 1]}, "a list of different ones"),
    ({"level": [0, 1], "min_terms": 3}, "give level or min_terms, not both"),
    ({"level": [0, 1, 2], "size": 2}, "size 2 is fewer rows than the 3 levels"),
])
def test_a_level_outside_the_curriculum_or_clashing_with_a_setting_is_refused(rg, params, message):
    with pytest.raises(Exception, match=message):
        rg("rg.basic_arithmetic", **{"size": 6, **params})
