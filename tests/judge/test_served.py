"""Each judge reward against a real OpenAI-compatible server: ``transformers serve`` on the tiny
bigram judge of conftest.py, whose answer is a function of the prompt's last character (a
template ending with the completion, or the rubric item, or the second response). Requests
are counted from the server's own access log."""

from __future__ import annotations

import pytest

import grpo_core
import grpo_rewards_judge
from grpo_core.contract import RewardContract

from .conftest import LAST, asked, chat

pytestmark = pytest.mark.timeout(600)


def bind(served, name, **params):
    settings = {"url": served.url, "model": served.model, "recheck": 0, "backoff": 0.05, **params}
    return grpo_core.get_reward(name, **settings)


def run(func, texts, served, **columns):
    logged: dict[str, float] = {}
    before = served.chat_requests()
    values = func([chat(t) for t in texts], prompts=[asked("What is 2 + 2?")] * len(texts),
                  answer=["4"] * len(texts), log_metric=logged.__setitem__, **columns)
    return values, logged, served.chat_requests() - before


def test_judge_yesno_reads_yes_no_and_counts_an_unreadable_answer(served_judge, judge_plugin):
    values, logged, requests = run(bind(served_judge, "judge.yesno", template=LAST),
                                   ["Answer: 4!", "Answer: 5~", "Answer: 4|"], served_judge)
    # the judge answers "yes", "no" and "?" (transformers serve returns no log-probabilities: the text is read)
    assert values == [1.0, 0.0, None]
    assert logged["judge.yesno/unparsed"] == 1.0 and logged["judge.yesno/requests"] == 3 and requests == 3
    assert logged["judge.yesno/tokens"] > 0  # the server's usage, summed


def test_judge_score_normalises_the_judges_score(served_judge, judge_plugin):
    values, logged, requests = run(bind(served_judge, "judge.score", rubric="Is it right?", template=LAST),
                                   ["Answer: 4@", "Answer: 4%", "Answer: 4~"], served_judge)
    assert values == [pytest.approx(0.7), 1.0, None]  # "7" of 10, "10" of 10, "no" is not a score
    assert logged["judge.score/unparsed"] == 1.0 and requests == 3


def test_judge_rubric_pays_the_share_of_items_met(served_judge, judge_plugin):
    # the template ends with the item: its last character is the judge's verdict on it
    items = ["cites the question!", "is under ten words~", "states one answer!"]
    values, logged, requests = run(bind(served_judge, "judge.rubric", items=items, template="{completion}\n{item}"),
                                   ["Answer: 4", "Answer: 5"], served_judge)
    assert values == [pytest.approx(2 / 3)] * 2 and requests == 6  # 2 completions x 3 items
    values, logged, _ = run(bind(served_judge, "judge.rubric", items=items + ["hedges|"],
                                 template="{completion}\n{item}"), ["Answer: 4"], served_judge)
    assert values == [None] and logged["judge.rubric/unparsed"] == 1.0  # one item unreadable: not a share of 3


def test_judge_pairwise_scores_each_completion_by_the_comparisons_it_wins(served_judge, judge_plugin):
    # the verdict follows the second response's last character: & -> "B" (it wins), ^ -> "A" (the first wins)
    func = bind(served_judge, "judge.pairwise", template="{first}\n{second}")
    values, logged, requests = run(func, ["one &", "two &", "three ^"], served_judge, group_size=3)
    # by hand: (0,1) 1 wins, (1,0) 0 wins, (0,2) 0, (2,0) 0, (1,2) 1, (2,1) 1 -> 0: 3 of 4, 1: 3 of 4, 2: 0 of 4
    assert values == [0.75, 0.75, 0.0] and requests == 6
    assert logged["judge.pairwise/requests"] == 6


def test_a_batch_through_the_concurrent_client_scores_as_one_request_at_a_time(served_judge, judge_plugin):
    texts = [f"Try {i}: Answer: {i}{'!~|@'[i % 4]}" for i in range(24)]
    many, _, requests = run(bind(served_judge, "judge.yesno", template=LAST, concurrency=6, cache="off"), texts,
                            served_judge)
    one, _, again = run(bind(served_judge, "judge.yesno", template=LAST, concurrency=1, cache="off"), texts,
                        served_judge)
    assert many == one == [1.0, 0.0, None, None] * 6 and requests == again == 24


def test_a_rescore_through_the_server_makes_no_request(served_judge, judge_plugin):
    texts = [f"Answer: {i}{'!~'[i % 2]}" for i in range(8)]
    first, logged, requests = run(bind(served_judge, "judge.yesno", template=LAST), texts, served_judge)
    assert requests == 8 and logged["judge.yesno/cached"] == 0.0
    again, logged, requests = run(bind(served_judge, "judge.yesno", template=LAST), texts, served_judge)
    assert again == first == [1.0, 0.0] * 4
    assert requests == 0 and logged["judge.yesno/requests"] == 0.0 and logged["judge.yesno/cached"] == 1.0


class TestJudgeYesnoPassesTheContractOnTransformersServe(RewardContract):
    """grpo's reward contract suite (hostile text, determinism, pickling, threads) with every
    question answered by the real server (no cache: the second call asks again)."""

    reward = "judge.yesno"
    plugin = grpo_rewards_judge
    # the hostile batch's 22 questions through transformers serve, one generation at a time: 37-43 s on
    # 2 cores shared with other work (the suite's 30 s is for a reward computed in process)
    max_seconds = 180.0

    @pytest.fixture(autouse=True)
    def _judge(self, served_judge, judge_plugin):
        type(self).params = {"url": served_judge.url, "model": served_judge.model, "cache": "off", "recheck": 0,
                             "max_chars": 600, "template": LAST}


class TestJudgeRubricPassesTheContractOnTransformersServe(TestJudgeYesnoPassesTheContractOnTransformersServe):
    """(one item: the hostile batch is 22 questions, as for judge.yesno)"""

    reward = "judge.rubric"

    @pytest.fixture(autouse=True)
    def _judge(self, served_judge, judge_plugin):
        type(self).params = {"url": served_judge.url, "model": served_judge.model, "cache": "off", "recheck": 0,
                             "max_chars": 600, "items": ["is right!"], "template": "{completion}\n{item}"}
