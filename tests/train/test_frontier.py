"""``frontier`` on its own (no model): AdaRFT's move of the difficulty knob, MoPPS's Beta
estimates per prompt, the choice they make, its state for --resume, and the messages for a
target of 0 or 1, rows of one difficulty and a knob that cannot move further."""

from __future__ import annotations

import json
import math

import pytest

from grpo_core.data.difficulty import Difficulty
from grpo_core.trainer.samplers.base import Pool, flat, pass_scores
from grpo_core.trainer.samplers.frontier import frontier

KNOB = Difficulty("level", param="level", example="level: [1, 2, 3]")


def pool(levels=None, n=None, knob=KNOB, said=None, keys=None):
    n = len(levels) if levels is not None else n
    return Pool(keys or list(range(n)), levels, knob if levels is not None else None, "arithmetic", 0, 4,
                (said if said is not None else []).append)


def test_the_knob_moves_as_adaruft_moves_it_and_says_once_when_it_cannot_go_lower():
    said = []
    p = pool([1, 2, 3, 4, 5] * 4, said=said)  # span 4
    f = frontier(step=0.1)
    f.start(p)
    assert f.level == 1.0 and "column 'level' (1 to 5, 5 values), starting at 1" in said[-1]
    f.observe([0], [[1.0, 1.0, 1.0, 1.0]])  # observed 1.0: + 0.1 * 4 * tanh(2 * 0.5) = + 0.30464
    assert f.level == pytest.approx(1 + 0.4 * math.tanh(1.0)) == pytest.approx(1.30464, abs=1e-5)
    f.observe([1], [[1.0, 0.0, 1.0, 1.0]])  # 0.75: + 0.4 * tanh(0.5) = + 0.18485
    assert f.level == pytest.approx(1.30464 + 0.18485, abs=1e-5)
    for _ in range(3):
        f.observe([0], [[0.0] * 4])  # 0.0: - 0.30464 a batch, to 1 and no lower
    assert f.level == 1.0
    stuck = [line for line in said if "cannot move further" in line]
    assert stuck == ["warning: frontier: the observed pass rate 0.00 is below the target 0.5 at the easiest "
                     "difficulty the training rows have (level 1): the knob cannot move further down; prompts are "
                     "chosen by their pass-rate estimates there. For easier prompts, load several with "
                     "dataset.params.level (level: [1, 2, 3])."]


def test_at_the_hardest_difficulty_it_says_it_cannot_go_higher():
    said = []
    f = frontier(step=1.0, start=3)
    f.start(pool([1, 2, 3] * 3, said=said))
    f.observe([2], [[1.0, 1.0, 1.0, 1.0]])
    assert f.level == 3.0 and "is above the target 0.5 at the hardest difficulty the training rows have (level 3): " \
        "the knob cannot move further up" in said[-1] and "For harder prompts" in said[-1]


def test_a_prompts_beta_posterior_is_its_buckets_rate_plus_its_own_decayed_counts():
    f = frontier(prior=2.0, decay=0.9)
    f.start(pool(n=10))
    assert f.posterior(3) == (1.0, 1.0)  # nothing seen: the bucket's Beta(1, 1) mean 0.5, 2 pseudo-counts
    f.observe([3], [[1.0, 1.0, 1.0, 0.0]])
    # the bucket (every row): 3 passes, 1 fail -> mean (3 + 1) / (4 + 2) = 2/3
    assert f.posterior(3) == pytest.approx((2 * 2 / 3 + 3, 2 / 3 + 1))
    assert f.posterior(4) == pytest.approx((4 / 3, 2 / 3))  # unseen: the bucket's mean only
    f.observe([3], [[0.0, 0.0, 0.0, 0.0]])  # decayed: 0.9 * 3 + 0 = 2.7 passes, 0.9 * 1 + 4 = 4.9 fails
    mean = 3.7 / 9.6
    assert f.posterior(3) == pytest.approx((2 * mean + 2.7, 2 * (1 - mean) + 4.9))


def test_rows_with_one_prompt_share_one_estimate():
    f = frontier()
    f.start(pool(n=4, keys=[0, 1, 0, 3]))  # rows 0 and 2: the same prompt
    f.observe([2], [[1.0, 1.0, 0.0, 0.0]])
    assert f.posterior(0) == f.posterior(2) == pytest.approx((3.0, 3.0))


def test_it_chooses_the_prompt_whose_groups_come_back_half_right():
    f = frontier(explore=0.0, candidates=8)
    p = pool(n=3)
    f.start(p)
    for _ in range(10):
        f.observe([0, 1, 2], [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert [f.choose(p, 1, [0]) for _ in range(40)] == [[1]] * 40
    assert f.expected == pytest.approx(f.posterior(1)[0] / sum(f.posterior(1)))


def test_the_batch_comes_from_the_rows_nearest_the_difficulty():
    f = frontier(explore=0.0, candidates=2)
    levels = [1] * 10 + [2] * 10 + [3] * 10
    p = pool(levels)
    f.start(p)
    assert all(levels[r] == 1 for _ in range(10) for r in f.choose(p, 3, None))
    f.level = 2.4  # nearest 2
    picks = [r for _ in range(10) for r in f.choose(p, 3, None)]
    assert {levels[r] for r in picks} == {2} and len(set(f.choose(p, 5, None))) == 5  # distinct prompts


def test_explore_takes_that_share_at_random():
    """explore=1: every prompt at random among the candidates, whatever the estimates say."""
    f = frontier(explore=1.0, candidates=3)
    p = pool(n=3)
    f.start(p)
    for _ in range(10):
        f.observe([0, 1, 2], [[1.0] * 4, [1.0, 0.0, 1.0, 0.0], [0.0] * 4])
    assert {f.choose(p, 1, None)[0] for _ in range(60)} == {0, 1, 2}


def test_its_state_resumes_the_same_choices():
    p = pool([1, 2, 3] * 20)
    whole, cut = frontier(), frontier()
    whole.start(p)
    cut.start(p)
    batches = [([r], [[1.0, 0.0, float(r % 2), 1.0]]) for r in range(8)]
    for rows, passed in batches[:4]:
        whole.choose(p, 2, None), cut.choose(p, 2, None)
        whole.observe(rows, passed), cut.observe(rows, passed)
    resumed = frontier()
    resumed.start(p)
    resumed.load(json.loads(json.dumps(cut.state())))  # through a file's JSON
    for rows, passed in batches[4:]:
        assert resumed.choose(p, 3, None) == whole.choose(p, 3, None)
        resumed.observe(rows, passed), whole.observe(rows, passed)
        assert resumed.level == whole.level and resumed.metrics() == whole.metrics()


@pytest.mark.parametrize("target, says", [(0, "only groups expected all wrong"), (1, "only groups expected all right"),
                                          (1.5, "no pass rate")])
def test_a_target_of_0_or_1_is_refused_with_why(target, says):
    with pytest.raises(ValueError) as err:
        frontier(target=target)
    assert str(err.value) == (f"frontier's target is {target!r}: that chooses {says}, flat groups that teach nothing; "
                              f"give a pass rate strictly between 0 and 1 (0.5: groups half right).")


def test_rows_all_of_one_difficulty_are_said_and_knob_true_refuses_them():
    said = []
    f = frontier()
    f.start(pool([1] * 6, said=said))
    assert f.level is None and said == [
        "warning: frontier: every training row of dataset 'arithmetic' has level 1: one difficulty, so the knob "
        "cannot steer; load several with dataset.params.level (level: [1, 2, 3]). Prompts are chosen by their "
        "pass-rate estimates alone (target 0.5)."]
    with pytest.raises(ValueError, match=r"^frontier\(knob=True\) steers by the dataset's difficulty, but every "
                                         r"training row of dataset 'arithmetic' has level 1"):
        frontier(knob=True).start(pool([1] * 6))


def test_rows_without_a_difficulty_are_said_and_knob_true_refuses_them():
    said = []  # MATH: "Level ?" rows have no level
    f = frontier()
    f.start(pool([1, None, 3, float("nan"), 2], said=said))
    assert f.level is None and said == [
        "warning: frontier: 2 of 5 training rows of dataset 'arithmetic' have no level; load several with "
        "dataset.params.level (level: [1, 2, 3]), which keeps only rows that have one. Prompts are chosen by "
        "their pass-rate estimates alone (target 0.5)."]
    with pytest.raises(ValueError, match=r"^frontier\(knob=True\) steers by the dataset's difficulty, but 2 of 5 "):
        frontier(knob=True).start(pool([1, None, 3, float("nan"), 2]))


def test_a_dataset_without_a_knob_goes_by_the_estimates_and_says_so():
    said = []
    f = frontier()
    p = pool(n=5, said=said)
    f.start(p)
    assert said == ["frontier: dataset 'arithmetic' declares no difficulty; prompts are chosen by their pass-rate "
                    "estimates alone (target 0.5)."]
    assert len(set(f.choose(p, 3, None))) == 3 and "difficulty" not in (f.observe([0], [[1.0, 0.0]]) or f.metrics())


def test_the_figures_it_logs():
    f = frontier()
    p = pool([1, 2] * 4)
    f.start(p)
    f.choose(p, 2, None)
    f.observe([0, 1], [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, float("nan"), 0.0]])
    m = f.metrics()
    assert m["observed_pass"] == pytest.approx(5 / 7) and m["flat_share"] == 0.5
    assert m["expected_pass"] == 0.5 and m["difficulty"] > 1  # nothing seen when chosen: Beta(1, 1)


def test_pass_scores_and_flat_groups():
    assert pass_scores([0.0, 1.0, None, 0.5, float("inf")]) == [0.0, 1.0, pytest.approx(math.nan, nan_ok=True), 0.5,
                                                                 pytest.approx(math.nan, nan_ok=True)]
    assert pass_scores([-1.0, 2.0, 0.5], right=2.0, wrong=-1.0) == [0.0, 1.0, 0.5]
    assert flat([1.0, 1.0, float("nan")]) and flat([0.0]) and not flat([0.0, 1.0, 1.0])


def test_arithmetic_declares_its_level_and_frontier_steers_by_it(installed_plugins):
    """A dataset with a knob (arithmetic's level, loaded with several) and the same dataset
    loaded at one level: the knob steers in the first, the message says how to widen it in
    the second."""
    import grpo_core
    from grpo_core.data.difficulty import of_dataset
    from grpo_core.trainer.prompts import PromptSettings, make_pool

    knob = of_dataset("arithmetic")
    assert knob == Difficulty("level", param="level", example="level: [1, 2, 3]")
    settings = PromptSettings("frontier", {}, "math.correctness", dataset="arithmetic", knob=knob)
    for levels, says in (([1, 2, 3], "frontier: difficulty from dataset 'arithmetic' column 'level' (1 to 3, 3 values), "
                                     "starting at 1"),
                         (1, "warning: frontier: every training row of dataset 'arithmetic' has level 1: one "
                             "difficulty, so the knob cannot steer; load several with dataset.params.level "
                             "(level: [1, 2, 3]).")):
        ds = grpo_core.build_prompts(grpo_core.load_dataset("arithmetic", level=levels, size=30), None)
        said = []
        p = make_pool(settings, ds, seed=0, group_size=4, say=said.append)
        f = frontier()
        f.start(p)
        assert said[0].startswith(says), said
        assert (f.level is not None) == (levels != 1)


@pytest.mark.parametrize("value, column, param", [("grade", "grade", None),
                                                  ({"column": "grade", "param": "g"}, "grade", "g")])
def test_an_adapter_declares_its_difficulty_by_name_or_mapping(value, column, param):
    from grpo_core.data.difficulty import declared

    def loader(split="train"):
        pass

    loader.difficulty = value
    assert declared(loader) == Difficulty(column, param=param)


@pytest.mark.parametrize("value", [3, {"param": "grade"}, {"column": "grade", "colour": "x"}, " "])
def test_a_malformed_difficulty_declaration_is_refused_naming_it(value):
    from grpo_core.base.errors import GrpoError
    from grpo_core.data.difficulty import declared

    def loader(split="train"):
        pass

    loader.difficulty = value
    with pytest.raises(GrpoError, match=r"^dataset 'puzzles' declares difficulty = .*: give the name of its "
                                        r"difficulty column \(a string\), or a mapping with 'column'"):
        declared(loader, "puzzles")
