r"""Gold-answer extraction: GSM8K '#### n' and MATH's last \boxed{...}."""

from __future__ import annotations

import pytest

from grpo_datasets import gsm8k_answer, last_boxed
from grpo_datasets.extract import split_gsm8k


@pytest.mark.parametrize(
    ("solution", "answer"),
    [
        ("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72", "72"),
        ("It costs 1,234 dollars.\n#### 1,234", "1234"),
        ("#### 1,000,000", "1000000"),
        ("He lost 3.\n#### -3", "-3"),
        ("#### $2,500.50", "2500.50"),
        ("#### 5.", "5"),
        ("no marker at all: 42", None),
        ("####", None),
        ("#### twelve", None),
        ("#### 12,34", None),  # not a thousands separator: refuse rather than guess 1234
    ],
)
def test_gsm8k_answer(solution, answer):
    assert gsm8k_answer(solution) == answer


def test_gsm8k_rationale_is_the_text_before_the_marker():
    rationale, answer = split_gsm8k("Step one.\nStep two <<2*3=6>>6.\n#### 6")
    assert rationale == "Step one.\nStep two <<2*3=6>>6."
    assert answer == "6"


@pytest.mark.parametrize(
    ("solution", "answer"),
    [
        (r"So the answer is $\boxed{\frac{1}{2}}$.", r"\frac{1}{2}"),
        (r"$\boxed{\left( 3, \frac{\sqrt{2}}{2} \right)}$", r"\left( 3, \frac{\sqrt{2}}{2} \right)"),
        (r"The remainder is $\boxed 5$.", "5"),
        (r"Hence $\fbox{10}$ ways.", "10"),
        (r"First $\boxed{3}$, corrected: $\boxed{4}$.", "4"),
        (r"The set is $\boxed{\{1, 2\}}$.", r"\{1, 2\}"),
        (r"$\boxed{x^{2^{3}}}$", "x^{2^{3}}"),
        (r"$\boxed{\text{(A)}}$", r"\text{(A)}"),
        (r"no box, answer 5", None),
        (r"cut off: $\boxed{\frac{1}{2}$", None),
        (r"empty $\boxed{}$", None),
        (r"first $\boxed{3}$ then broken $\boxed{4$", None),  # never fall back to an earlier box
        (r"$\boxedsomething{3}$", None),
    ],
)
def test_last_boxed(solution, answer):
    assert last_boxed(solution) == answer
