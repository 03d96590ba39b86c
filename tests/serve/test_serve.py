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
                time_limit=None, max_body=64 * 1024, max_items=256, max_chars=4000, label_column="answer")
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
        assert got["extra_logs"]["math.correctness"] == [e["math.correctness"] for e in expected]
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
