"""The judge client against servers of the tests' own (``FakeJudge``): the concurrency limit,
time limits on a server that stalls, retries on 429/503, a refused key, the key only in the
Authorization header, unreadable and malformed answers counted (never 0), log-probabilities."""

from __future__ import annotations

import json
import math
import threading
import time

import pytest

import grpo_core
from grpo_rewards_judge.client import JudgeUnavailable
from grpo_rewards_judge.testing import Answer, FakeJudge, exact

from .conftest import asked, chat


def reward(judge: FakeJudge, name: str = "judge.yesno", **params):
    settings = {"url": judge.url, "cache": "off", "recheck": 0, "backoff": 0.01, **params}
    return grpo_core.get_reward(name, **settings)


def scored(func, texts: list[str], gold: str = "4"):
    """(values, what it logged) for completions ``texts`` of the question 'What is 2 + 2?'."""
    logged: dict[str, float] = {}
    values = func([chat(t) for t in texts], prompts=[asked("What is 2 + 2?")] * len(texts),
                  answer=[gold] * len(texts), log_metric=logged.__setitem__)
    return values, logged


def test_requests_run_concurrently_up_to_the_limit_and_no_further(judge_plugin):
    slow = lambda request: Answer(content=exact(request), delay=0.3)  # noqa: E731
    texts = [f"Try {i}.\nAnswer: {4 if i % 2 else 5}" for i in range(12)]  # 12 distinct questions
    with FakeJudge(slow) as judge:
        start = time.perf_counter()
        values, logged = scored(reward(judge, concurrency=3), texts)
        took = time.perf_counter() - start
        assert values == [0.0, 1.0] * 6 and logged["judge.yesno/requests"] == 12
        assert judge.max_in_flight == 3  # at the limit, never above it
        assert 4 * 0.3 <= took < 12 * 0.3  # 4 rounds of 3, not 12 one after another
    with FakeJudge(slow) as judge:
        scored(reward(judge, concurrency=1), texts[:3])
        assert judge.max_in_flight == 1


def test_a_server_that_stalls_costs_the_timeout_and_retries_then_fails_naming_why(judge_plugin, capsys):
    def stall_some(request):
        return Answer(delay=3600) if "stall" in request.response else exact(request)

    with FakeJudge(stall_some) as judge:
        start = time.perf_counter()
        values, logged = scored(reward(judge, timeout=0.5, retries=1), ["Answer: 4", "stall Answer: 4", "Answer: 5"])
        took = time.perf_counter() - start
        assert values == [1.0, None, 0.0]  # the stalled item scores None, the others are kept
        assert logged["judge.yesno/failed"] == 1.0 and logged["judge.yesno/unparsed"] == 0.0
        assert 1.0 <= took < 5.0  # two tries of 0.5 s each (in parallel with the others), not an hour
        assert judge.requests == 4  # 2 answered, the stalled one tried twice
        err = capsys.readouterr().err
        assert "gave no answer for 1 of 3 completions (no answer within 0.5s (2 tries))" in err
        with pytest.raises(JudgeUnavailable, match=r"answered none of 2 questions: no answer within 0.5s \(2 tries\)"):
            scored(reward(judge, timeout=0.5, retries=1), ["stall 1", "stall 2"])


def test_the_rewards_time_limit_stops_the_call_and_its_retries(judge_plugin, capsys):
    from grpo_core.rewards.policy import GuardedReward

    with FakeJudge(lambda r: Answer(status=503, delay=0.2)) as judge:
        bound = reward(judge, retries=20, backoff=0.2)
        bound.time_limit = 1.0  # health.reward_time_limit / time_limit: in its rewards entry
        start = time.perf_counter()
        values, logged = scored(GuardedReward(bound, log=lambda *_: None), ["Answer: 4"] * 2 + ["Answer: 5"])
        assert values == [None, None, None] and time.perf_counter() - start < 2.5
        assert logged["rewards/judge.yesno/timeouts"] == 3.0
        made = judge.requests
        time.sleep(1.5)  # a retry left running would ask again within 0.2-0.4 s
        assert judge.requests == made and made <= 2 * 4


def test_429_and_503_are_retried_with_backoff_and_retry_after_honoured(judge_plugin):
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def busy(request):
        with lock:
            k = seen[request.response] = seen.get(request.response, 0) + 1
        if k == 1:
            return Answer(status=429, headers={"Retry-After": "1"})
        if k == 2:
            return Answer(status=503)
        return exact(request)

    with FakeJudge(busy) as judge:
        start = time.perf_counter()
        values, logged = scored(reward(judge, retries=3), ["Answer: 4", "Answer: 5"])
        assert values == [1.0, 0.0]
        assert judge.requests == 6 and logged["judge.yesno/requests"] == 6.0  # 429, 503, then the answer: each
        assert time.perf_counter() - start >= 0.95  # the server's Retry-After: 1 waited out
    seen.clear()
    with FakeJudge(busy) as judge:  # one retry is not enough: both fail, and say why
        with pytest.raises(JudgeUnavailable, match=r"answered 503: .*\(2 tries\)"):
            scored(reward(judge, retries=1), ["Answer: 4", "Answer: 5"])


def test_a_refused_key_stops_the_batch_at_once_naming_the_variable_and_not_the_key(judge_plugin, monkeypatch):
    key = "sk-test-do-not-print-0123456789"
    monkeypatch.setenv("JUDGE_TEST_KEY", key)
    with FakeJudge(lambda r: Answer(status=401, headers={"X-Echo": r.authorization})) as judge:
        with pytest.raises(JudgeUnavailable) as err:
            scored(reward(judge, api_key_env="JUDGE_TEST_KEY", concurrency=2), [f"Answer: {i}" for i in range(40)])
        assert "refused the API key (401" in str(err.value)
        assert "set the environment variable JUDGE_TEST_KEY to a valid key" in str(err.value)
        assert key not in str(err.value)
        assert judge.requests <= 4  # stopped at once: not 40 items x 4 tries
        assert judge.authorization[0] == f"Bearer {key}"


def test_a_server_echoing_the_key_in_an_error_has_it_blanked_out(judge_plugin, monkeypatch, capsys):
    key = "sk-test-echoed-9876543210"
    monkeypatch.setenv("JUDGE_TEST_KEY", key)

    def echoing(request):
        if "bad" in request.response:  # a 400 for this item only, whose body repeats the header
            return Answer(status=400, headers={}, content=None)
        return exact(request)

    class EchoJudge(FakeJudge):
        def _handler(self):
            base = super()._handler()

            class Handler(base):
                def _answer(self, body, answer):
                    if answer.status == 400:
                        self._send(400, {"error": f"bad request from {self.headers.get('Authorization')}"})
                    else:
                        super()._answer(body, answer)

            return Handler

    with EchoJudge(echoing) as judge:
        values, _ = scored(reward(judge, api_key_env="JUDGE_TEST_KEY"), ["Answer: 4", "bad Answer: 4"])
    assert values == [1.0, None]
    err = capsys.readouterr().err
    assert "answered 400" in err and "Bearer [key]" in err and key not in err


def test_the_key_travels_in_the_authorization_header_only(judge_plugin, monkeypatch):
    key = "sk-test-header-only-55555"
    monkeypatch.setenv("JUDGE_TEST_KEY", key)
    bodies = []

    def record(request):
        bodies.append(json.dumps(request.body))
        return exact(request)

    with FakeJudge(record) as judge:
        scored(reward(judge, api_key_env="JUDGE_TEST_KEY"), ["Answer: 4"])
        assert judge.authorization == [f"Bearer {key}"] and key not in bodies[0]
    monkeypatch.delenv("JUDGE_TEST_KEY")
    with FakeJudge(record) as judge:  # no key set: no header (a local server needs none)
        scored(reward(judge, api_key_env="JUDGE_TEST_KEY"), ["Answer: 4"])
        assert judge.authorization == [None]


def test_an_unreadable_answer_scores_none_and_is_counted_never_zero(judge_plugin, capsys):
    def vague(request):
        return "It is hard to say." if "vague" in request.response else exact(request)

    with FakeJudge(vague) as judge:
        values, logged = scored(reward(judge), ["Answer: 4", "vague Answer: 4", "vague Answer: 5", "Answer: 5"])
        assert values == [1.0, None, None, 0.0]
        assert logged["judge.yesno/unparsed"] == 2.0 and logged["judge.yesno/failed"] == 0.0
        values, logged = scored(reward(judge, "judge.score", rubric="right?"), ["vague 4", "Answer: 4"])
        assert values == [None, 1.0] and logged["judge.score/unparsed"] == 1.0
    err = capsys.readouterr().err
    assert "judge.yesno: the judge's answer could not be read for 2 of 4 completions (e.g. 'It is hard to say.')" in err
    assert "judge.score: the judge's answer could not be read for 1 of 2" in err


def test_an_answer_that_is_not_a_chat_completion_or_too_large_is_no_answer(judge_plugin):
    class Broken(FakeJudge):
        def _handler(self):
            base = super()._handler()

            class Handler(base):
                def _answer(self, body, answer):
                    if answer.content == "not json":
                        data = b"<html>proxy error</html>"
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    else:
                        super()._answer(body, answer)

            return Handler

    def reply(request):
        if "html" in request.response:
            return "not json"
        if "huge" in request.response:
            return "yes" * (2 << 20)  # 6 MiB of answer
        return exact(request)

    with Broken(reply) as judge:
        values, logged = scored(reward(judge, retries=0), ["Answer: 4", "html", "huge"])
    assert values == [1.0, None, None] and logged["judge.yesno/failed"] == 2.0


def test_log_probabilities_give_the_probability_of_yes(judge_plugin):
    def soft(request):
        return Answer(content="yes", logprobs=[("yes", math.log(0.8)), ("no", math.log(0.2))])

    with FakeJudge(soft) as judge:
        values, _ = scored(reward(judge), ["Answer: 4"])
        assert values == [pytest.approx(0.8)]
        values, _ = scored(reward(judge, logprobs=False), ["Answer: 4"])  # not asked for: the answer's yes
        assert values == [1.0]
    pair = lambda request: Answer(content="A", logprobs=[("A", math.log(0.3)), ("B", math.log(0.6))])  # noqa: E731
    with FakeJudge(pair) as judge:
        values = reward(judge, "judge.pairwise")([chat("one"), chat("two")], group_size=2)
        # (0, 1): P(first) 1/3 -> 0 gets 1/3, 1 gets 2/3; (1, 0): the same for 1 first -> means 1/2 each
        assert values == [pytest.approx(0.5), pytest.approx(0.5)]


def test_no_server_fails_the_batch_once_and_then_at_once_until_the_cooldown(judge_plugin):
    from grpo_core.rewards.policy import CheckGuard

    from .conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    # backoff 1 s, 2 retries: an item waits at least 1.5 s (jitter 0.5-1) before it fails alone
    func = grpo_core.get_reward("judge.yesno", url=url, cache="off", recheck=0, backoff=1.0, retries=2)
    start = time.perf_counter()
    with pytest.raises(JudgeUnavailable, match=r"cannot be reached \(ConnectionRefusedError.* after 3 tries; is the "
                                               r"server running there"):
        scored(func, [f"Answer: {i}" for i in range(64)])
    assert time.perf_counter() - start < 20  # the batch fails with its first item, not after 64 x >= 1.5 s
    # as grpo check and training call it: the batch raised, so the policy tries each item alone; each fails at
    # once (without the cooldown: 64 x >= 1.5 s of backoff, 96 s at least, whatever the machine's load)
    start = time.perf_counter()
    guard = CheckGuard(func, log=lambda *_: None)
    values, _ = scored(guard, [f"Answer: {i}" for i in range(64)])
    assert values == [None] * 64 and guard.failed == 64 and time.perf_counter() - start < 60
    with pytest.raises(JudgeUnavailable, match=r"not asked again for \d+s"):
        scored(func, ["Answer: 4"])


def test_a_question_the_judge_refuses_alone_does_not_count_it_down(judge_plugin):
    # a 400 (a prompt too long for the judge) fails that question only: the judge is up
    refuses_long = lambda r: Answer(status=400, content="too long") if "long" in r.response else exact(r)  # noqa: E731
    with FakeJudge(refuses_long) as judge:
        func = reward(judge)
        with pytest.raises(JudgeUnavailable, match=r"answered none of 1 questions: answered 400"):
            scored(func, ["long Answer: 4"])  # as grpo's guard calls a batch's items one by one
        assert scored(func, ["Answer: 4"])[0] == [1.0]  # asked at once, not 'not asked again for 30s'
        assert judge.requests == 2
