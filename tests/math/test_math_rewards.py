"""The four rewards: values computed by hand, registration by name, TRL's calling convention."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_rewards_math
from grpo_rewards_math import correctness, cosine, exact, numeric


def msg(text):
    return [{"role": "assistant", "content": text}]


# ---------------------------------------------------------------- correctness


def test_correctness_basic_and_conversational():
    comps = [r"\boxed{2\sqrt{2}}", msg(r"so \boxed{\sqrt{8}}"), msg("The answer is 3."), "no idea"]
    assert correctness(comps, [r"2\sqrt{2}"] * 4, workers=2) == [1.0, 1.0, 0.0, 0.0]


def test_unparseable_gold_is_none_never_one():
    comps = [r"\boxed{\frac{1}{}", r"\boxed{\frac{1}{}", "", r"\boxed{{{", "42"]
    golds = [r"\frac{1}{", "", r"\frac{1}{", "{{{", None]
    assert correctness(comps, golds, workers=2) == [None] * 5


def test_numbers_compare_without_the_pool(monkeypatch):
    from grpo_rewards_math import pool

    def boom(*a, **k):
        raise AssertionError("the pool was used for plain numbers")

    monkeypatch.setattr(pool, "run", boom)
    comps = ["#### 72", r"\boxed{72.0}", "The answer is 1,000.", "<answer>71</answer>", "none"]
    assert correctness(comps, ["72", "72", "1000", "#### 72", "5"]) == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_columns_must_align():
    with pytest.raises(ValueError, match="2 entries for 1 completions"):
        correctness(["1"], ["1", "2"])
    with pytest.raises(TypeError, match="one entry per completion"):
        correctness(["1"], "1")


def test_trl_calling_convention_and_logging():
    logged, metrics = {}, {}
    out = correctness(
        prompts=[msg("q")] * 3,
        completions=[msg(r"\boxed{\frac12}"), msg("I give up"), msg("<answer>0.5</answer>")],
        completion_ids=[[1, 2], [3], [4]],
        answer=["0.5", "0.5", r"\frac{1}{2}"],
        trainer_state=None,
        log_extra=lambda col, vals: logged.setdefault(col, vals),
        log_metric=lambda name, v: metrics.setdefault(name, v),
        some_other_column=[1, 2, 3],
        workers=2,
    )
    assert out == [1.0, 0.0, 1.0]
    assert logged == {"math.correctness/answer": [r"\frac12", "", "0.5"]}
    assert metrics["math.correctness/no_answer"] == pytest.approx(1 / 3)
    assert metrics["math.correctness/timeouts"] == 0.0


def test_arithmetic_left_undone_is_not_an_answer():
    # what SmolLM2-135M learned on level-1 arithmetic after ~50 GRPO steps: restate the question, and
    # let the checker do the sum ('18 + 6. The answer is "18 + 6".' was paid 1.0 for gold 24)
    undone = ['18 + 6. The answer is "18 + 6".', "The answer is 20 + 4.", "Answer: 3 \\times 8",
              "The answer is \\frac{48}{2}.", "Answer: x = 18 + 6", "Answer: 2^{3} \\cdot 3", "<answer>25 - 1</answer>"]
    done = ["The answer is 24.", "18 + 6 = 24", "Answer: 24.0", "\\boxed{24}", "The answer is 1.5 \\times 10^{3}."]
    golds = ["24"] * (len(undone) + 4) + ["1500"]
    metrics = {}
    out = correctness(undone + done, golds, fallback_last_number=True, workers=2,
                      log_metric=lambda name, v: metrics.setdefault(name, v))
    assert out == [0.0] * len(undone) + [1.0] * len(done)
    assert metrics["math.correctness/unevaluated"] == pytest.approx(7 / 12)
    assert correctness(undone, ["24"] * len(undone), allow_expressions=True, fallback_last_number=True,
                       workers=2) == [1.0] * len(undone)  # the checker's own verdict: equal
    # a fraction that is not whole is a value; an expression gold (MATH's) keeps expressions
    assert correctness(["\\boxed{\\frac{6}{8}}", "\\boxed{1 + 1}", "\\boxed{\\sqrt{8}}"],
                       ["0.75", "2", "2\\sqrt{2}"], workers=2) == [1.0, 0.0, 1.0]
    assert cosine(["The answer is 20 + 4."], ["24"], workers=2) == [pytest.approx(-1.0, abs=1e-2)]  # wrong


def test_a_power_tower_against_a_number_never_reaches_the_checker(monkeypatch):
    from grpo_rewards_math import pool

    monkeypatch.setattr(pool, "run", lambda *a, **k: pytest.fail("the checker was asked"))
    assert correctness([r"\boxed{9^{9^{9^{9}}}}", "The answer is 3 + 4."], ["1", "7"], workers=2) == [0.0, 0.0]


# ---------------------------------------------------------------- cosine


def test_cosine_formula_by_hand():
    # max_len 100: lengths 0, 25, 50, 100, 400 tokens; correct then wrong
    ids = [[0] * n for n in (0, 25, 50, 100, 400)]
    right = cosine([r"\boxed{7}"] * 5, ["7"] * 5, completion_ids=ids, max_len=100)
    wrong = cosine([r"\boxed{8}"] * 5, ["7"] * 5, completion_ids=ids, max_len=100)
    c25 = math.cos(math.pi / 4)
    assert right == pytest.approx([1.0, 0.5 + 0.25 * (1 + c25), 0.75, 0.5, 0.5])
    assert wrong == pytest.approx([-1.0, -0.5 - 0.25 * (1 + c25), -0.75, -0.5, -0.5])


def test_cosine_matches_trl_and_uses_characters_without_ids():
    from trl.rewards import get_cosine_scaled_reward

    comps = [msg(r"\boxed{\frac{1}{3}}"), msg(r"\boxed{\frac{1}{2}}")]
    ids = [[1] * 50, [1] * 50]
    trl = get_cosine_scaled_reward(max_len=100)(comps, [r"\frac{1}{3}"] * 2, ids)
    ours = cosine(comps, [r"\frac{1}{3}"] * 2, completion_ids=ids, max_len=100, workers=2)
    assert trl == pytest.approx([0.75, -0.75])
    assert ours == pytest.approx(trl)
    # no ids: length in characters; "\boxed{5}" is 9 characters
    assert cosine([r"\boxed{5}"], ["5"], max_len=18) == pytest.approx([0.75])


def test_cosine_params_and_none():
    assert cosine(["\\boxed{1}"], [""], max_len=10) == [None]
    out = cosine(
        ["#### 1"], ["1"], completion_ids=[[]], max_len=10, min_value_correct=0, max_value_correct=2
    )
    assert out == [2.0]
    with pytest.raises(ValueError, match="max_len"):
        cosine(["1"], ["1"], max_len=0)


def test_cosine_stays_inside_its_range_where_the_formula_rounds_past_it():
    # a wrong empty answer earns min_value_wrong exactly; 1.0 + (1e-121 - 1.0) is 0.0 in floats (hypothesis found it)
    out = cosine([r"\boxed{1}"], ["0"], completion_ids=[[]], max_len=1, min_value_wrong=1e-121, max_value_wrong=1.0)
    assert out == [1e-121]


# ---------------------------------------------------------------- numeric


def test_numeric_tolerances():
    comps = ["The answer is 72.5", "#### 101", r"\boxed{\frac{3}{4}}", '{"answer": "1.2e3"}']
    golds = ["72", "100", "0.75", "1200"]
    assert numeric(comps, golds) == [0.0, 0.0, 1.0, 1.0]
    assert numeric(comps, golds, atol=0.5) == [1.0, 0.0, 1.0, 1.0]
    assert numeric(comps, golds, rtol=0.01) == [1.0, 1.0, 1.0, 1.0]  # 0.72 and 1.0 wide
    assert numeric(comps, golds, rtol=0.005) == [0.0, 0.0, 1.0, 1.0]  # 0.36 and 0.5 wide
    assert numeric(comps, golds, atol=0.4, rtol=0.001) == [0.0, 0.0, 1.0, 1.0]


def test_numeric_bounds_columns_medcalc_style():
    comps = [r"\boxed{5.2}", r"\boxed{5.3}", "Answer: 4.75 mg", r"\boxed{9}", "no number"]
    golds = ["5", "5", "5", "5", "5"]
    lower = [4.75, "4.75", 4.75, None, 4.75]
    upper = [5.25, "5.25", 5.25, None, 5.25]
    # item 4 has no bounds: falls back to the tolerance check against the gold
    assert numeric(comps, golds, lower=lower, upper=upper) == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert numeric(comps, golds, lower=lower, upper=upper, atol=5) == [1.0, 0.0, 1.0, 1.0, 0.0]


def test_numeric_none_when_gold_is_not_a_number():
    comps = ["#### 3", "#### 3", "#### 3", "#### 3"]
    golds = ["Paris", "08/12/2021", "", 3]
    assert numeric(comps, golds) == [None, None, None, 1.0]
    # bounds alone are enough
    assert numeric(["#### 3"], ["(4 weeks, 2 days)"], lower=[2.5], upper=[3.5]) == [1.0]


def test_numeric_rejects_bad_tolerance():
    with pytest.raises(ValueError, match="must be >= 0"):
        numeric(["1"], ["1"], atol=-1)


# ---------------------------------------------------------------- exact


def test_exact():
    comps = [
        r"\boxed{\text{Paris}}",
        "The answer is  New   York.",
        r"\boxed{0.5}",
        "The answer is 72.",
        "nothing",
        "#### $x+1$",
    ]
    golds = ["paris", "new york", r"\frac{1}{2}", "#### 72", "", "x+1"]
    assert exact(comps, golds) == [1.0, 1.0, 0.0, 1.0, None, 1.0]


# ---------------------------------------------------------------- registration


def test_registered_by_name_with_params(register_plugin):
    from grpo_core import compose_rewards, get_reward, list_rewards

    register_plugin(grpo_rewards_math)
    entries = {e.name: e for e in list_rewards() if e.name.startswith("math.")}
    assert set(entries) == {"math.correctness", "math.numeric", "math.exact", "math.cosine", "math.kimi_length"}
    for name, entry in entries.items():
        first_line = entry.obj.__doc__.strip().splitlines()[0]
        assert entry.description == first_line and len(first_line) < 130, name

    r = get_reward("math.numeric", rtol=0.05)
    assert r.__name__ == "math.numeric" and r.required_columns == ("answer",)
    assert r(completions=["#### 104"], answer=["100"], lower=[None], upper=[None]) == [1.0]

    funcs, weights = compose_rewards(
        ["math.correctness(timeout=2.0):2", "math.cosine(max_len=500)"]
    )
    assert [f.__name__ for f in funcs] == ["math.correctness", "math.cosine"] and weights == [
        2.0,
        1.0,
    ]


def test_parameters_are_type_checked(register_plugin):
    from grpo_core import get_reward
    from grpo_core.errors import RewardParamError

    register_plugin(grpo_rewards_math)
    with pytest.raises(RewardParamError, match="max_len"):
        get_reward("math.cosine", max_len="long")
    with pytest.raises(RewardParamError, match="fallback_last_number"):
        get_reward("math.correctness", fallback_last_number="yes")
    with pytest.raises(RewardParamError, match="did you mean 'rtol'"):
        get_reward("math.numeric", rtoll=0.1)
    with pytest.raises(RewardParamError, match="dataset column"):
        get_reward("math.exact", answer="1")


def test_rewards_pickle_by_reference():
    import pickle

    for f in (correctness, numeric, exact, cosine):
        assert pickle.loads(pickle.dumps(f)) is f


@pytest.mark.parametrize(
    "gold, cand",
    [
        ("72", "72.0"),
        ("72", "73"),
        ("72", r"\frac{144}{2}"),
        (r"\frac{1}{2}", r"\frac{2}{4}"),
        (r"\frac{1}{2}", "-1/2"),
        (r"-\frac{3}{4}", r"\dfrac{-6}{8}"),
        ("0.5", "0.50"),
        ("0.5", "0.05"),
        ("[1, 2)", "[1,2)"),
        ("[1, 2)", "(1, 2)"),
        (r"(-\infty, 3]", r"(-\infty,3]"),
        (r"(0, \infty)", r"(0, -\infty)"),
        ("(1, 2)", "(1.0, 2)"),
    ],
)
def test_fast_path_agrees_with_the_checker(gold, cand):
    from grpo_rewards_math import _worker
    from grpo_rewards_math.rewards import _fast

    fast = _fast(gold, cand)
    assert fast is not None  # decided in process
    assert fast == _worker.check(gold, cand)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=-(10**12), max_value=10**12),
    style=st.sampled_from(
        [r"\boxed{{{s}}}", "#### {s}", "The final answer is ${s}$.", "<answer>{s}</answer>"]
    ),
    sep=st.booleans(),
)
def test_integers_in_any_style(n, style, sep):
    s = f"{n:,}" if sep else str(n)
    assert correctness([style.format(s=s)], [str(n)]) == [1.0]
    assert correctness([style.format(s=str(n + 1))], [str(n)]) == [0.0]
    assert numeric([style.format(s=s)], [n]) == [1.0]
