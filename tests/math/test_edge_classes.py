"""The answer shapes issue 40 found misread, each with its near misses: a spaced unary minus,
an interval after an answer phrase, a retraction across boxes, huge factorials and
binomials, and a completion that is nothing but a number."""

from __future__ import annotations

import pytest

from grpo_rewards_math import correctness, numeric
from grpo_rewards_math.extract import extract_answer, to_math, unevaluated


def ans(text: str) -> tuple:
    e = extract_answer(text)
    return e.answer, e.source


# ---------------------------------------------------------------- a spaced unary minus


def test_a_spaced_minus_is_a_number_not_arithmetic_left_undone():
    assert not unevaluated("- 5", "-5") and not unevaluated("+ 7", "7") and not unevaluated("x = - 12", "-12")
    assert unevaluated("3 - 5", "-2") and unevaluated("- 3 - 5", "-8") and unevaluated(r"- \frac{48}{2}", "-24")
    paid = [r"\boxed{- 5}", r"\boxed{+ 7}", r"\boxed{x = - 12}", r"\boxed{- \frac{3}{4}}", r"\boxed{-  9}"]
    assert correctness(paid, ["-5", "7", "-12", "-0.75", "-9"], workers=2) == [1.0] * 5
    undone = [r"\boxed{3 - 5}", r"\boxed{- 3 - 5}", r"\boxed{- \frac{48}{2}}"]
    assert correctness(undone, ["-2", "-8", "-24"], workers=2) == [0.0, 0.0, 0.0]
    assert correctness([r"\boxed{- 5}"], ["5"], workers=2) == [0.0]  # the sign still counts


# ---------------------------------------------------------------- an interval after a phrase


@pytest.mark.parametrize("text, expected", [
    ("Answer: (0, 4]", "(0, 4]"),
    ("Answer: (0, 4].", "(0, 4]"),  # the sentence's period goes, the bracket stays
    ("The final answer is [1, 2). Done.", "[1, 2)"),
    (r"**Answer:** (-\infty, 3]", r"(-\infty, 3]"),
    ("Answer: [0, 4]", "[0, 4]"),
    ("The answer is 5)", "5"),  # a closer with no opener still goes
    ('{"answer": 17.5}', "17.5"),
])
def test_the_phrase_reader_keeps_an_intervals_closer(text, expected):
    assert ans(text) == (expected, "phrase")


def test_an_interval_after_a_phrase_is_paid_as_in_a_box():
    comps = ["Answer: (0, 4]", "Answer: (0, 4].", "The final answer is [1, 2).", "Answer: [0, 4]",
             "The answer is the interval (0,4].", r"\boxed{(0, 4]}"]
    golds = ["(0, 4]", "(0, 4]", "[1, 2)", "(0, 4]", "(0, 4]", "(0, 4]"]
    assert correctness(comps, golds, workers=2) == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]


# ---------------------------------------------------------------- a retraction across boxes

FIX = "Wait, I made an error in the second step: 7 + 9 = 16, so"
CORRECTED = [  # the same correction in each layout: 16 stands, 15 is withdrawn
    rf"So \boxed{{15}}. {FIX} the correct answer is \boxed{{16}}.",
    f"So 7 + 8 = 15.\n#### 15\n{FIX}\n#### 16",
    f"Answer: 15\n{FIX}\nAnswer: 16",
    r"$\boxed{15}$ That is wrong: 7 + 9 = 16. $\boxed{16}$",
    r"\boxed{15}. My mistake, \boxed{16}",
    r"\boxed{14}, then \boxed{15}. That's incorrect; I miscounted. \boxed{16}",
]


@pytest.mark.parametrize("gold, score", [("16", 1.0), ("15", 0.0)])
def test_every_layout_pays_the_corrected_answer_and_not_the_retracted_one(gold, score):
    assert correctness(CORRECTED, [gold] * len(CORRECTED), workers=2) == [score] * len(CORRECTED)


def test_a_retraction_withdraws_only_what_comes_before_it():
    assert ans(CORRECTED[0]) == ("16", "boxed")
    assert ans(r"\boxed{14}. That was wrong. \boxed{15} or \boxed{16}") == ("15, 16", "boxed")  # a hedge after it
    assert ans(r"I made an error earlier. \boxed{16}") == ("16", "boxed")


AFTER_THE_ANSWER = [  # an admission that follows the last answer withdraws nothing: it is about another value
    (r"\boxed{16}. Note: 15 is incorrect.", "boxed"),
    ("#### 16\nNote: 15 is incorrect.", "hash"),
    ("Answer: 16\nA common slip gives 15, which is wrong.", "phrase"),
]


@pytest.mark.parametrize("text, source", AFTER_THE_ANSWER)
def test_a_retraction_after_the_last_answer_withdraws_nothing(text, source):
    # issue 55 item 9: with a retraction counted anywhere in the text, each of these read as
    # no answer (the text after "is incorrect" holds none) and scored 0.0 against 16
    assert ans(text) == ("16", source)
    assert correctness([text, text], ["16", "15"], workers=2) == [1.0, 0.0]


HEDGED = [  # no admission of an error between the boxes: two answers at once, never paid
    r"\boxed{15} or \boxed{16}",
    r"\boxed{15}. Wait: \boxed{16}",
    "\\boxed{15}\n\nActually \\boxed{16}",
    r"\boxed{15}. No, \boxed{16}",
    r"\boxed{15}. I made no mistake, but \boxed{16} also works",
    r"\boxed{15}. There is no error here. \boxed{16}",
    r"The answer is \boxed{15}, not \boxed{16}",
    r"\boxed{15}; \boxed{16} is wrong",  # the admission follows the last box: nothing replaces it
]


@pytest.mark.parametrize("gold", ["15", "16"])
def test_hedged_boxes_stay_a_set(gold):
    assert correctness(HEDGED, [gold] * len(HEDGED), workers=2) == [0.0] * len(HEDGED)


# ---------------------------------------------------------------- huge factorials and binomials

HUGE = [r"\boxed{500000!}", r"\boxed{\binom{800000}{400000}}", r"\boxed{\frac{500000!}{2}}", r"\boxed{(10^6)!}",
        r"\boxed{{800000 \choose 400000}}", r"\boxed{\dbinom{10^{6}}{3}}", "The answer is 1000000!."]


def test_huge_factorials_and_binomials_against_a_number_never_reach_the_checker(monkeypatch):
    """The checker held each of these for up to the 5 s limit (bench/math_reward.py times them)."""
    from grpo_rewards_math import pool

    monkeypatch.setattr(pool, "run", lambda *a, **k: pytest.fail("the checker was asked"))
    metrics = {}
    out = correctness(HUGE, ["1"] * len(HUGE), workers=2, log_metric=metrics.__setitem__)
    assert out == [0.0] * len(HUGE)
    assert metrics["math.correctness/unevaluated"] == 1.0


def test_a_small_factorial_or_binomial_is_arithmetic_left_undone_too():
    comps = [r"\boxed{4!}", r"\boxed{\binom{4}{1}}", r"\boxed{\frac{4!}{2}}", r"\boxed{24}"]
    golds = ["24", "4", "12", "24"]
    assert correctness(comps, golds, workers=2) == [0.0, 0.0, 0.0, 1.0]
    # the checker finds them equal (4! = 24, C(4,1) = 4, 24 / 2 = 12): the rule is what refuses them
    assert correctness(comps, golds, allow_expressions=True, workers=2) == [1.0] * 4
    # an expression gold keeps expressions: \binom{5}{2} is MATH's kind of answer
    assert correctness([r"\boxed{\binom{5}{2}}", r"\boxed{10}"], [r"\binom{5}{2}"] * 2, workers=2) == [1.0, 1.0]


# ---------------------------------------------------------------- nothing but a number


@pytest.mark.parametrize("text, expected", [
    ("42", ("42", "bare")),
    (" -3.5 \n", ("-3.5", "bare")),
    ("1/2", ("1/2", "bare")),
    ("- 5", ("- 5", "bare")),
    ("1,234.", ("1,234", "bare")),
    ("<think>7 + 8 is 15</think>\n 15 ", ("15", "bare")),
    ("42 apples", (None, "none")),
    ("1/2/3", (None, "none")),
    ("3 4", (None, "none")),
    ("12,34", (None, "none")),
    ("42 or 43", (None, "none")),
])
def test_a_completion_that_is_only_a_number_is_its_answer(text, expected):
    assert ans(text) == expected


def test_a_bare_number_is_paid_and_a_bare_whole_fraction_is_arithmetic_left_undone():
    comps = ["42", " -3.5 \n", "1/2", "4/2", "1,234", "43", "3/4"]
    golds = ["42", "-3.5", "0.5", "2", "1234", "42", r"\frac{3}{4}"]
    assert correctness(comps, golds, workers=2) == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert numeric(["42", "1/2", "-3.5"], ["42", "0.5", "-3.5"]) == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- math-verify's known misreads (issue 55)


def test_an_escaped_dollar_inside_dollars_does_not_end_the_formula():
    # math-verify's test_latex_notation: "$ \frac{1}{2} \$ = \frac{10}{9} $" is one formula whose last
    # side is 10/9. The span used to end at the escaped \$, leaving "\frac{1}{2} \": 0.0 against 10/9
    # and 1.0 against 1/2 (a wrong answer paid)
    text = r"Answer $ \frac{1}{2} \$ = \frac{10}{9} $"
    assert to_math(text) == r"\frac{1}{2} = \frac{10}{9}"
    assert to_math(r"$\$5$") == "5"  # an escaped dollar is text: the span goes on past it
    comps = [f"<answer>{text}</answer>", f"The final answer is {text[7:]}."]
    assert correctness(comps, [r"\frac{10}{9}"] * 2, workers=2) == [1.0, 1.0]
    assert correctness(comps, [r"\frac{1}{2}"] * 2, workers=2) == [0.0, 0.0]


NAMED = [  # a formula that names the thing asked about, then its value in words
    ("Final Answer: The maximum number of points that could be in the domain of $f(x)$ is 19. I hope it is correct.",
     "19"),
    ("Final Answer: the value of $a_{10}$ is 55.", "55"),
    ("Final Answer: The largest $n$ is 34.", "34"),  # (read so before)
]


def test_a_formula_that_names_the_subject_is_not_the_answer():
    # math-verify's test_math_extraction_edge_cases: "... the domain of $f(x)$ is 19" read as the
    # answer f(x) (formulas in prose were all taken as the answer, the number after them dropped)
    assert [to_math(extract_answer(t).answer) for t, _ in NAMED] == ["19", "55", "34"]
    assert correctness([t for t, _ in NAMED], [g for _, g in NAMED], workers=2) == [1.0, 1.0, 1.0]
    # near misses: a formula with a value of its own is still the answer; two values are a hedge;
    # a negation is no answer
    assert to_math(extract_answer(r"Final Answer: $f(x)$ is $\pi$, about 3.14.").answer) == r"f(x), \pi"
    assert to_math(extract_answer(r"The answer is $\pi$, about 3.14.").answer) == r"\pi"
    assert to_math(extract_answer("Final Answer: for $g(x, y)$ the minimum is 19 or 20.").answer) == "19, 20"
    assert to_math(extract_answer("Final Answer: the domain of $f(x)$ is not 19.").answer) is None
    assert correctness([NAMED[0][0]], ["20"], workers=2) == [0.0]


def test_arithmetic_left_undone_in_latex_delimiters_is_still_refused():
    # math-verify's test_latex_notation[4], "Answer \( (9+1) \)" against 10, expects 1: it scores 0.0 here
    # on purpose since the rule against arithmetic left undone (a88d472: "(18 + 6)" paid for 24 is the
    # reward hack the quickstart's model learned); allow_expressions=True pays it
    text = r"<answer>Answer \( (9+1) \)</answer>"
    assert correctness([text], ["10"], workers=2) == [0.0]
    assert correctness([text], ["10"], workers=2, allow_expressions=True) == [1.0]
