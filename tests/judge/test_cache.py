"""The answers' cache: a re-score asks nothing (0 requests, counted by the server), a change to
what the judge is asked asks again, a failure is not kept, the same question twice in a batch
is asked once; and the judge asked twice at temperature 0 is reported when it differs."""

from __future__ import annotations

import sqlite3
import threading

import pytest

import grpo_core
from grpo_rewards_judge import cache as answers
from grpo_rewards_judge.testing import Answer, FakeJudge, exact

from .conftest import asked, chat

TEXTS = ["Answer: 4", "Answer: 5", "I think 4.\nAnswer: 4", "Answer: 22"]


def score(judge, texts=TEXTS, **params):
    logged: dict[str, float] = {}
    func = grpo_core.get_reward("judge.yesno", url=judge.url, recheck=0, **params)
    values = func([chat(t) for t in texts], prompts=[asked("What is 2 + 2?")] * len(texts),
                  answer=["4"] * len(texts), log_metric=logged.__setitem__)
    return values, logged


def test_a_rescore_makes_no_request(judge_plugin, tmp_path):
    with FakeJudge(exact) as judge:
        first, logged = score(judge)
        assert first == [1.0, 0.0, 1.0, 0.0] and judge.requests == 4
        assert logged["judge.yesno/requests"] == 4 and logged["judge.yesno/tokens"] > 0
        answers._open.clear()  # as a new process would: the answers come from the file
        again, logged = score(judge)
        assert again == first
        assert judge.requests == 4  # the server saw no new request
        assert (logged["judge.yesno/requests"], logged["judge.yesno/tokens"], logged["judge.yesno/cached"]) == \
            (0.0, 0.0, 1.0)
        # what the judge is asked changed (the question): asked again, all four
        score(judge, question="Is the final answer right?")
        assert judge.requests == 8
    rows = sqlite3.connect(tmp_path / "judge-cache" / answers.FILE).execute("SELECT COUNT(*) FROM answers").fetchone()
    assert rows == (8,)  # GRPO_JUDGE_CACHE (the fixture's) is where cache='default' writes


def test_the_cache_key_holds_the_judge_the_template_the_prompt_the_completion_and_the_reference(judge_plugin):
    with FakeJudge(exact) as judge:
        score(judge, texts=["Answer: 4"])
        made = judge.requests
        for change in ({"model": "other-judge"}, {"template": "Q: {prompt}\n<response>\n{completion}\n</response>"},
                       {"seed": 1}, {"max_tokens": 17}):
            score(judge, texts=["Answer: 4"], **change)
            assert judge.requests == made + 1, change
            made = judge.requests
        func = grpo_core.get_reward("judge.yesno", url=judge.url, recheck=0)
        func([chat("Answer: 4")], prompts=[asked("What is 1 + 3?")], answer=["4"])  # another prompt
        func([chat("Answer: 4")], prompts=[asked("What is 2 + 2?")], answer=["5"])  # another reference
        assert judge.requests == made + 2


def test_a_failed_question_is_not_kept_and_is_asked_again(judge_plugin):
    down = threading.Event()
    down.set()

    def flaky_server(request):
        return Answer(status=503) if down.is_set() and "5" in request.response else exact(request)

    with FakeJudge(flaky_server) as judge:
        values, _ = score(judge, texts=["Answer: 4", "Answer: 5"], retries=0)
        assert values == [1.0, None]
        down.clear()
        values, logged = score(judge, texts=["Answer: 4", "Answer: 5"], retries=0)
        assert values == [1.0, 0.0] and logged["judge.yesno/requests"] == 1.0  # only the one that failed


def test_the_same_question_twice_in_a_batch_is_asked_once(judge_plugin):
    with FakeJudge(exact) as judge:
        values, logged = score(judge, texts=["Answer: 4"] * 6 + ["Answer: 5"] * 2, cache="off")
        assert values == [1.0] * 6 + [0.0] * 2 and judge.requests == 2 and logged["judge.yesno/requests"] == 2


def test_an_unwritable_cache_folder_is_a_clear_error(judge_plugin, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with FakeJudge(exact) as judge, pytest.raises(OSError, match="the judge's cache at .* cannot be used .*cache='off'"):
        score(judge, cache=str(blocker / "cache"))


def test_a_judge_that_answers_the_same_request_differently_is_reported_with_its_spread(judge_plugin, capsys):
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def coin(request):  # at "temperature 0", a different verdict each time it is asked
        with lock:
            calls[request.response] = calls.get(request.response, 0) + 1
            return "yes" if calls[request.response] % 2 else "no"

    with FakeJudge(coin) as judge:
        logged: dict[str, float] = {}
        func = grpo_core.get_reward("judge.yesno", url=judge.url, cache="off", recheck=2)
        func([chat(t) for t in TEXTS], answer=["4"] * 4, log_metric=logged.__setitem__)
        assert judge.requests == 6  # 4 questions, the first 2 asked twice
        assert logged["judge.yesno/flaky"] == 2.0
        later: dict[str, float] = {}
        func([chat("Answer: 7")], answer=["4"], log_metric=later.__setitem__)  # the recheck budget is spent
        assert judge.requests == 7 and "judge.yesno/flaky" not in later
    err = capsys.readouterr().err
    assert ("answered the same request differently on 2 of 2 questions asked twice at temperature 0 (spread up "
            "to 1.00; e.g. 'yes' then 'no')") in err
    with FakeJudge(exact) as judge:  # an honest judge: asked twice, the same, nothing said
        from grpo_rewards_judge import ask

        ask.reset()
        logged = {}
        func = grpo_core.get_reward("judge.yesno", url=judge.url, cache="off", recheck=8)
        func([chat(t) for t in TEXTS], answer=["4"] * 4, log_metric=logged.__setitem__)
        assert judge.requests == 8 and logged["judge.yesno/flaky"] == 0.0
    assert "differently" not in capsys.readouterr().err
