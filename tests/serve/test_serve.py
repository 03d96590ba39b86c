"""`grpo serve` on loopback: OpenRLHF's request scores as `grpo score` does, bad input
is a 4xx that names the problem and the server serves on, tokens and binds."""

from __future__ import annotations

import argparse
import http.client
import json
from urllib.parse import urlparse

import pytest

from tests.conftest import use_installed

SPECS = ["math.correctness:2", "format.think_answer_r1"]


@pytest.fixture
def installed(monkeypatch):
    yield from use_installed(monkeypatch, "grpo-datasets,grpo-rewards-math,grpo-rewards-format")


def _args(**kw):
    base = dict(config=None, rewards=SPECS, stage=None, host="127.0.0.1", port=0, token=None, workers=2, queue=4,
                time_limit=None, max_body=64 * 1024, max_items=256, max_chars=4000, label_column="answer", eos=[],
                scores="auto", token_file=None)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.fixture
def serving(installed):
    from grpo_core.commands.serve import build
    from grpo_core.serve.server import Background

    def start(**kw):
        return Background(build(_args(**kw)))

    return start


def post(url: str, path: str, body: bytes, headers: dict | None = None, method: str = "POST"):
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        conn.close()


def rows(n: int = 100):
    from grpo_core import load_dataset

    ds = load_dataset("arithmetic", level=1, size=n)
    shapes = ["<think>\nadding\n</think>\n<answer>\n{a}\n</answer>", "Answer: {a}", "I think it is {w}", "{a}",
              "<think>hm</think><answer>{w}</answer>"]
    return [{"prompt": r["question"], "answer": r["answer"],
             "completion": shapes[i % len(shapes)].format(a=r["answer"], w=int(r["answer"]) + 1)}
            for i, r in enumerate(ds)]


def grpo_score(tmp_path, data: list[dict]) -> list[dict]:
    from grpo_core.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in data))
    assert main(["score", "--rewards", *SPECS, "--input", str(src), "--output", str(out), "--no-progress"]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def openrlhf_body(data: list[dict]) -> bytes:
    """Byte for byte what OpenRLHF's request_api_wrapper sends: requests.post(json=...)
    serialises with json.dumps(..., allow_nan=False) and encodes UTF-8."""
    payload = {"query": [r["prompt"] + r["completion"] for r in data], "prompts": [r["prompt"] for r in data],
               "labels": [r["answer"] for r in data]}
    return json.dumps(payload, allow_nan=False).encode("utf-8")


def test_openrlhf_and_score_endpoints_match_grpo_score(serving, tmp_path):
    data = rows(100)
    expected = grpo_score(tmp_path, data)
    with serving() as url:
        status, got = post(url, "/get_reward", openrlhf_body(data))
        assert status == 200, got
        assert got["rewards"] == [e["total"] for e in expected]
        for name in ("math.correctness", "format.think_answer_r1"):
            assert got["extra_logs"][name] == [e[name] for e in expected], name
        assert got["extra_logs"]["unscored"] == [0.0] * len(data)
        assert got["scores"] == [e["total"] / 3 for e in expected]  # weights 2 and 1 on rewards in [0, 1]
        body = json.dumps({"completions": [r["completion"] for r in data], "prompts": [r["prompt"] for r in data],
                           "columns": {"answer": [r["answer"] for r in data]}}).encode()
        status, mine = post(url, "/score", body)
        assert status == 200, mine
        assert mine["total"] == [e["total"] for e in expected]
        for name in ("math.correctness", "format.think_answer_r1"):
            assert mine["scores"][name] == [e[name] for e in expected]
        assert mine["notes"] == [{}] * len(data)
        assert mine["weights"] == {"math.correctness": 2.0, "format.think_answer_r1": 1.0}
        status, listed = post(url, "/rewards", b"", method="GET")
        assert status == 200 and [r["name"] for r in listed["rewards"]] == ["math.correctness", "format.think_answer_r1"]
        assert all(r["sha256"] and r["distribution"] for r in listed["rewards"])
        assert post(url, "/health", b"", method="GET")[1]["status"] == "ok"


GOOD = json.dumps({"completions": ["Answer: 4"], "columns": {"answer": ["4"]}}).encode()
BAD = [  # (path, body, headers, status, words in the message)
    ("/score", b"", {}, 400, "empty"),
    ("/score", b"\xff\xfe{}", {}, 400, "not UTF-8"),
    ("/score", b"{not json", {}, 400, "not valid JSON"),
    ("/score", b"[1, 2]", {}, 400, "JSON object"),
    ("/score", b"[" * 100_000 + b"]" * 100_000, {}, 413, "limit"),
    ("/score", b"[" * 20_000 + b"]" * 20_000, {}, 400, ""),
    ("/score", b'{"columns": {}}', {}, 400, "'completions' is missing"),
    ("/score", b'{"completions": "Answer: 4", "columns": {"answer": ["4"]}}', {}, 400, "must be a list"),
    ("/score", b'{"completions": [], "columns": {"answer": []}}', {}, 400, "empty"),
    ("/score", json.dumps({"completions": ["x"] * 300}).encode(), {}, 413, "--max-items"),
    ("/score", b'{"completions": [4], "columns": {"answer": ["4"]}}', {}, 400, "completions[0]"),
    ("/score", json.dumps({"completions": ["x" * 5000], "columns": {"answer": ["4"]}}).encode(), {}, 413, "--max-chars"),
    ("/score", b'{"completions": [[{"role": "assistant"}]], "columns": {"answer": ["4"]}}', {}, 400, "'content'"),
    ("/score", b'{"completions": ["a", "b"], "prompts": ["p"], "columns": {"answer": ["4", "5"]}}', {}, 400, "'prompts' has 1"),
    ("/score", b'{"completions": ["a"], "columns": ["4"]}', {}, 400, "'columns' must be an object"),
    ("/score", b'{"completions": ["a"], "columns": {"answer": "4"}}', {}, 400, "column 'answer' must be a list"),
    ("/score", b'{"completions": ["a", "b"], "columns": {"answer": ["4"]}}', {}, 400, "column 'answer' has 1"),
    ("/score", b'{"completions": ["a"]}', {}, 422, "missing column(s) 'answer'"),
    ("/score", b'{"completions": ["a"], "columns": {"answer": ["4"]}, "extra": 1}', {}, 400, "unknown field"),
    ("/score", b'{"completions": ["a"], "columns": {"answer": ["4"], "completion_ids": [1]}}', {}, 400, "reserved"),
    ("/score", GOOD, {"Content-Type": "text/plain"}, 415, "application/json"),
    # columns named as TRL's keywords to every reward: the call failed, a 500 (the last one has no reward that fails)
    *[("/score", json.dumps({"completions": ["a"], "columns": {"answer": ["4"], name: [1]}}).encode(), {}, 400,
       f"'columns': column '{name}' has the name of a keyword every reward is given by TRL or grpo")
      for name in ("log_metric", "trainer_state", "log_extra", "group_size")],
    # a whole number past Python's 4,300 digits: json.loads raised a bare ValueError, a 500
    ("/score", b'{"completions": ["a"], "columns": {"answer": [' + b"9" * 4301 + b"]}}", {}, 400,
     "the body holds a whole number of 4,301 digits (999999999999...), longer than the 4,300 digits Python reads"),
    ("/get_reward", b'{"query": ["pa"], "prompts": ["p"], "labels": [-' + b"1" * 5000 + b"]}", {}, 400,
     "5,000 digits (-11111111111...)"),
    ("/get_reward", b'{"prompts": ["p"], "labels": ["4"]}', {}, 400, "'query' is missing"),
    ("/get_reward", b'{"query": [1], "prompts": ["p"], "labels": ["4"]}', {}, 400, "query[0] must be a string"),
    ("/get_reward", b'{"query": ["pa"], "prompts": ["p"], "labels": ["4", "5"]}', {}, 400, "'labels' has 2"),
    ("/get_reward", b'{"query": ["pa"], "prompts": ["p"]}', {}, 422, "'answer'"),
    ("/nowhere", GOOD, {}, 404, "no endpoint"),
]


def test_bad_input_is_a_4xx_naming_it_and_the_server_serves_on(serving):
    with serving() as url:
        for path, body, headers, status, words in BAD:
            got_status, got = post(url, path, body, headers)
            assert got_status == status, (path, body[:60], got)
            assert words in got["error"], (words, got["error"])
            assert post(url, "/score", GOOD)[0] == 200  # still serving
        assert post(url, "/score", b"", method="GET")[0] == 405
        ok, good = post(url, "/score", GOOD)
        assert ok == 200 and good["total"] == [2.0]


def test_a_label_column_named_as_a_keyword_rewards_are_given_is_refused(installed):
    from grpo_core.base.errors import GrpoError
    from grpo_core.commands.serve import build

    with pytest.raises(GrpoError, match="--label-column trainer_state: column 'trainer_state' has the name of a "
                                        "keyword every reward is given"):
        build(_args(label_column="trainer_state"))


def test_non_loopback_bind_needs_a_token(installed, monkeypatch):
    from grpo_core.base.errors import GrpoError
    from grpo_core.serve.server import check_bind, token_from

    monkeypatch.delenv("GRPO_SERVE_TOKEN", raising=False)
    with pytest.raises(GrpoError, match="refusing to bind 0.0.0.0 without a token"):
        check_bind("0.0.0.0", token_from(None))
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "secret")
    monkeypatch.setenv("GRPO_SERVE_TOKEN", "from-env")
    assert token_from(None) == "from-env"


def test_a_token_is_required_when_set(serving):
    with serving(token="s3cret") as url:
        assert post(url, "/score", GOOD)[0] == 401
        assert post(url, "/score", GOOD, {"Authorization": "Bearer wrong"})[0] == 401
        assert post(url, "/rewards", b"", method="GET")[0] == 401
        assert post(url, "/health", b"", method="GET")[0] == 200
        status, got = post(url, "/score", GOOD, {"Authorization": "Bearer s3cret"})
        assert status == 200 and got["total"] == [2.0]


def test_timeouts_and_raising_items_are_notes_not_failures(serving, tmp_path, monkeypatch):
    (tmp_path / "slow_rewards.py").write_text(
        "import time\n"
        "def slow(completions, **kw):\n"
        "    if any('slow' in c for c in completions):\n"
        "        time.sleep(30)\n"
        "    return [1.0] * len(completions)\n"
        "def picky(completions, **kw):\n"
        "    if any('boom' in c for c in completions):\n"
        "        raise ValueError('boom')\n"
        "    return [0.5] * len(completions)\n")
    monkeypatch.chdir(tmp_path)
    specs = ["math.correctness", "slow_rewards.py:slow", "slow_rewards.py:picky"]
    with serving(rewards=specs, time_limit=0.5) as url:
        body = json.dumps({"completions": ["Answer: 4", "slow boom"], "columns": {"answer": ["4", "4"]}}).encode()
        status, got = post(url, "/score", body)
        assert status == 200, got
        assert got["scores"]["slow"] == [None, None] and got["scores"]["picky"] == [0.5, None]
        assert got["notes"][0] == {"slow": "timeout"} and got["notes"][1]["slow"] == "timeout"
        assert got["notes"][1]["picky"].startswith("ValueError")
        assert got["total"] == [1.5, 0.0]
        fast = json.dumps({"completions": ["Answer: 4"], "columns": {"answer": ["4"]}}).encode()
        status, again = post(url, "/score", fast)  # the slow reward is not dropped for later requests
        assert status == 200 and again["scores"]["slow"] == [1.0] and again["total"] == [2.5]


def test_sigterm_finishes_the_requests_in_flight(installed, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    from grpo_core.serve.server import free_port

    (tmp_path / "slow1.py").write_text("import time\ndef slow1(completions, **kw):\n"
                                       "    time.sleep(1.5)\n    return [1.0] * len(completions)\n")
    port = free_port()
    env = dict(os.environ, GRPO_PLUGINS="")
    proc = subprocess.Popen([sys.executable, "-m", "grpo_core", "serve", "--rewards", "slow1.py:slow1",
                             "--port", str(port)], cwd=tmp_path, env=env, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert post(url, "/health", b"", method="GET")[0] == 200
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        answers = []
        body = json.dumps({"completions": ["a", "b"]}).encode()
        client = threading.Thread(target=lambda: answers.append(post(url, "/score", body)))
        client.start()
        time.sleep(0.5)  # the request is being scored
        proc.send_signal(signal.SIGTERM)
        client.join(timeout=30)
        assert answers and answers[0][0] == 200 and answers[0][1]["total"] == [1.0, 1.0]
        proc.wait(timeout=30)
        with pytest.raises(OSError):
            post(url, "/health", b"", method="GET")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_body_declared_too_large_is_refused_before_it_is_read(serving):
    import socket

    with serving() as url:  # --max-body 64 KiB
        u = urlparse(url)
        with socket.create_connection((u.hostname, u.port), timeout=10) as sock:
            sock.sendall(b"POST /score HTTP/1.1\r\nHost: grpo\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 10000000\r\n\r\n{")
            reply = read_response(sock)  # within the 10 s timeout: the server does not wait for the promised 10 MB
    assert reply.startswith(b"HTTP/1.1 413") and b"10000000 bytes" in reply


def read_response(sock) -> bytes:
    """One HTTP response, whole: read until its Content-Length of body is in, or the server
    closes (its head and body can come in separate reads: one recv() saw the head alone)."""
    import re

    data = b""
    while True:
        head, end, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$", head) if end else None
        if length and len(body) >= int(length[1]):
            return data
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:  # closed on the body it did not read: what came before stands
            return data
        if not chunk:
            return data
        data += chunk


def test_a_chunked_body_past_the_limit_is_refused_as_it_streams(serving):
    # no Content-Length to check: 205 KB of a valid request, in 8 KiB chunks, against --max-body 64 KiB
    body = json.dumps({"completions": ["x" * 3000] * 68, "columns": {"answer": ["4"] * 68}}).encode()
    assert len(body) > 200_000
    with serving() as url:
        u = urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.request("POST", "/score", body=(body[i:i + 8192] for i in range(0, len(body), 8192)),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        answer = conn.getresponse()
        assert answer.status == 413 and "passes the limit of 65536 bytes" in json.loads(answer.read())["error"]
        conn.close()
        assert post(url, "/score", GOOD)[0] == 200


def test_a_token_guards_get_reward_and_the_remote_client_sends_it(serving, monkeypatch):
    from grpo_core.rewards.reward import compose_rewards

    monkeypatch.delenv("GRPO_SERVE_TOKEN", raising=False)
    with serving(token="s3cret") as url:
        body = openrlhf_body(rows(2))
        assert post(url, "/get_reward", body)[0] == 401  # OpenRLHF's own client sends no token
        status, got = post(url, "/get_reward", body, {"Authorization": "Bearer s3cret"})
        assert status == 200 and len(got["rewards"]) == 2
        (remote,), _ = compose_rewards([f"remote.server(url={url!r})"])
        with pytest.raises(RuntimeError, match="answered 401"):
            remote(completions=["Answer: 4"], answer=["4"])
        monkeypatch.setenv("GRPO_SERVE_TOKEN", "s3cret")
        assert remote(completions=["Answer: 4", "5"], answer=["4", "4"]) == [2.0, 0.0]


def test_a_token_from_a_file(installed, tmp_path):
    from grpo_core.base.errors import GrpoError
    from grpo_core.commands.serve import build

    (tmp_path / "token").write_text("fr0m-file\n")
    server = build(_args(token_file=str(tmp_path / "token"))).state.server
    assert server.token == "fr0m-file"
    with pytest.raises(GrpoError, match="cannot read it"):
        build(_args(token_file=str(tmp_path / "missing")))
    with pytest.raises(GrpoError, match="not both"):
        build(_args(token="x", token_file=str(tmp_path / "token")))


def test_an_over_long_response_is_not_scored_and_the_rest_is(serving):
    # --max-chars 4000: OpenRLHF turns a 4xx into 5 retries and then a sample with no reward
    prompt = "What is 2 + 2?"
    queries = [prompt + "Answer: 4", prompt + "Answer: 4 " + "x" * 5000, prompt + "Answer: 5"]
    body = json.dumps({"query": queries, "prompts": [prompt] * 3, "labels": ["4"] * 3}).encode()
    with serving() as url:
        status, got = post(url, "/get_reward", body)
    assert status == 200, got
    assert got["rewards"] == [2.0, 0.0, 0.0]
    assert got["extra_logs"]["unscored"] == [0.0, 2.0, 0.0]
    assert "5010 characters" in got["notes"][1]["query"] and "--max-chars" in got["notes"][1]["query"]
    assert got["notes"][0] == {} and got["notes"][2] == {}


def test_end_markers_of_the_configs_tokenizer_of_eos_and_of_chat_templates(serving, tmp_path):
    from grpo_core.testing import make_tokenizer

    tok = make_tokenizer()
    tok.add_special_tokens({"eos_token": "<|my_end|>"})
    tok.save_pretrained(tmp_path / "model")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"model: {{id: {tmp_path / 'model'}}}\ndataset: {{name: arithmetic}}\n"
                   f"rewards: ['format.think_answer_r1']\n")
    response = "<think>\nadding\n</think>\n<answer>\n4\n</answer>"
    ends = ["", "<|my_end|>", "[END]", "<|eot_id|>", "<end_of_turn>\n<eos>", "</s>", "<|other|>"]
    prompt = "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    body = json.dumps({"query": [prompt + response + e for e in ends], "prompts": [prompt] * len(ends),
                       "labels": ["4"] * len(ends)}).encode()
    with serving(config=str(cfg), rewards=None, eos=["[END]"]) as url:
        status, got = post(url, "/get_reward", body)
    assert status == 200, got
    # the tokenizer's, --eos's and the chat templates' markers go; an unknown one stays (format fails)
    assert got["rewards"] == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0]


def test_what_scores_holds(serving, installed):
    from grpo_core.base.errors import GrpoError
    from grpo_core.serve.openrlhf import ScoresScale

    body = openrlhf_body([{"prompt": "p", "completion": c, "answer": "4"}
                          for c in ("<think>\nx\n</think>\n<answer>\n4\n</answer>", "Answer: 4", "Answer: 5")])
    for choice, expected in (("auto", [1.0, 2 / 3, 0.0]), ("normalized", [1.0, 2 / 3, 0.0]),
                             ("total", [3.0, 2.0, 0.0]), ("math.correctness", [1.0, 1.0, 0.0]),
                             ("format.think_answer_r1", [1.0, 0.0, 0.0])):
        with serving(scores=choice) as url:
            status, got = post(url, "/get_reward", body)
        assert status == 200 and got["rewards"] == [3.0, 2.0, 0.0], got
        assert got["scores"] == expected, choice
    # a negative weight: the total's range is [-1, 0], scaled onto [0, 1]
    scale = ScoresScale.choose("auto", ["a", "b"], [2.0, -1.0], [(0.0, 1.0), (0.0, 1.0)])
    assert (scale.low, scale.high) == (-1.0, 2.0) and scale.of([0.5, -1.0, 2.0], {}) == [0.5, 0.0, 1.0]
    assert ScoresScale.choose("auto", ["a", "mine"], [1.0, 1.0], [(0.0, 1.0), None]).scaled is False
    with pytest.raises(GrpoError, match="mine declare"):
        ScoresScale.choose("normalized", ["a", "mine"], [1.0, 1.0], [(0.0, 1.0), None])
    with pytest.raises(GrpoError, match="one of the served rewards"):
        ScoresScale.choose("best", ["a"], [1.0], [(0.0, 1.0)])


def test_scores_stay_inside_0_1_when_a_reward_pays_past_its_declared_range(serving, tmp_path, monkeypatch):
    # OpenRLHF's dynamic filtering keeps prompts whose mean score lies in --algo.dynamic_filtering_range
    # (0 1): a reward paying past the range it declares must not push a score out of [0, 1]
    (tmp_path / "over.py").write_text(
        "def over(completions, **kw):\n"
        "    return [float(c.split()[-1]) for c in completions]\n"
        "over.range = (0.0, 2.0)\n")
    monkeypatch.chdir(tmp_path)
    body = json.dumps({"query": [f"p{v}" for v in ("x 3.0", "x -1.0", "x 1.0", "x 2.0")],
                       "prompts": ["p"] * 4}).encode()
    with serving(rewards=["over.py:over"]) as url:  # auto: normalized, the total's range [0, 2] onto [0, 1]
        status, got = post(url, "/get_reward", body)
    assert status == 200, got
    assert got["rewards"] == [3.0, -1.0, 1.0, 2.0]  # the total as it is
    assert got["scores"] == [1.0, 0.0, 0.5, 1.0]  # 3 and -1 held at the ends; 1 -> 0.5, 2 -> 1


def test_the_response_inside_a_query():
    from grpo_core.serve.responses import Ends, response_of

    prompt = ("<|im_start|>system\nThink step by step, then give the answer in tags.<|im_end|>\n"
              "<|im_start|>user\nWhat is 7 + 5? Ünïcödé<|im_end|>\n<|im_start|>assistant\n")
    response = "<think>\n7 + 5 = 12\n</think>\n<answer>\n12\n</answer>"
    assert response_of(prompt + response, prompt) == (response, None)
    cut = "prompt cut at its start (the peer truncated it)"
    assert response_of(prompt[50:] + response, prompt) == (response, cut)
    assert response_of("\ufffd" + prompt[-60:] + response, prompt) == (response, cut)  # a UTF-8 byte split
    assert response_of(prompt[-12:] + response, prompt) == (response, cut)  # fewer than 32 characters kept
    assert response_of("Question: 7 + 5?" + response, prompt) == (
        "Question: 7 + 5?" + response, "prompt not found in the query: the whole query was scored")
    ends = Ends.of()
    assert ends.trim("x</answer>\n<|im_end|>") == "x</answer>\n"  # the response's own newline stays
    assert ends.trim("x<|im_end|>\n<|endoftext|>") == "x"
    assert ends.trim("a <|im_end|> b") == "a <|im_end|> b"  # only at the end
    assert ends.trim_completion([{"role": "assistant", "content": "4</s>"}]) == [{"role": "assistant", "content": "4"}]
    # a tokenizer's end and padding text counts when it reads as a special token
    tok = type("Tok", (), {"eos_token": "<|my_end|>", "pad_token": "!"})()
    assert Ends.of(tokenizer=tok).trim("Yes!<|my_end|>") == "Yes!"


def test_requests_wait_for_a_worker_without_a_thread_and_a_full_server_says_429(serving, tmp_path, monkeypatch):
    import threading
    import time

    (tmp_path / "slow2.py").write_text("import time\ndef slow2(completions, **kw):\n"
                                       "    time.sleep(1.5)\n    return [1.0] * len(completions)\n")
    monkeypatch.chdir(tmp_path)
    body = json.dumps({"completions": ["a"]}).encode()
    with serving(rewards=["slow2.py:slow2"], workers=2, queue=4) as url:
        answers, most = [], 0
        clients = [threading.Thread(target=lambda: answers.append(post(url, "/score", body))) for _ in range(10)]
        for c in clients:
            c.start()
        while any(c.is_alive() for c in clients):
            most = max(most, sum(t.name == "AnyIO worker thread" for t in threading.enumerate()))
            time.sleep(0.01)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * 6 + [429] * 4  # 2 scoring, 4 waiting, the rest turned away at once
    assert all("the server is full: 2 requests scoring and 4 waiting" in got["error"]
               for status, got in answers if status == 429)
    assert most <= 2  # the waiting requests hold no thread of their own
