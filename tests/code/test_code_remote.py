"""The remote backend: the rewards with sandbox='sandboxfusion' against a small
local server that speaks SandboxFusion's /run_code API and runs the local sandbox."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request

import pytest

from grpo_rewards_code import rewards
from grpo_rewards_code.jobs import Job, Limits
from grpo_rewards_code.remote import request_body
from grpo_rewards_code.server import make_server

FENCE = "```"
TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 1"]


def block(code: str) -> str:
    return f"{FENCE}python\n{code}{FENCE}"


@pytest.fixture(scope="module")
def service():
    server = make_server("127.0.0.1", 0, workers=2)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    server.server_close()


def post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url + "/run_code", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_server_answers_run_code_like_sandboxfusion(service):
    status, reply = post(service, {"code": "print('hello')\nimport sys\nsys.exit(3)", "language": "python"})
    assert status == 200
    assert reply["status"] == "Failed"  # SandboxFusion: Success only for return code 0
    run = reply["run_result"]
    assert (run["status"], run["return_code"], run["stdout"]) == ("Finished", 3, "hello\n")
    status, reply = post(service, {"code": "while True: pass", "language": "python", "run_timeout": 1})
    assert reply["run_result"]["status"] == "TimeLimitExceeded"
    status, reply = post(service, {"code": "print(input())", "language": "python", "stdin": "from stdin"})
    assert (reply["status"], reply["run_result"]["stdout"]) == ("Success", "from stdin\n")
    status, reply = post(service, {"code": "echo hi", "language": "bash"})
    assert status == 400 and "only 'python'" in reply["detail"]


def test_rewards_through_the_service_equal_the_local_ones(service, metrics):
    completions = [block("def add(a, b):\n    return a + b\n"),  # 2 of 3 (the last test is wrong on purpose)
                   block("def add(a, b):\n    return a * b\n"),  # 2 * 2 == 4 only: 1 of 3
                   block("def add(a, b):\n    while True:\n        pass\n"),  # stuck: 0, timeout
                   "no code"]
    remote = rewards.tests(completions, tests=[TESTS] * 4, timeout=1.0, sandbox="sandboxfusion",
                           endpoint=service, **metrics.kwargs())
    assert remote == pytest.approx([2 / 3, 1 / 3, 0.0, 0.0])
    assert remote == rewards.tests(completions, tests=[TESTS] * 4, timeout=1.0)
    assert metrics.extra["code.tests/cause"] == ["failed", "failed", "timeout", "no_code"]
    assert metrics.metrics["code.tests/timeouts"] == 1.0
    assert rewards.runs(completions[:2], sandbox="sandboxfusion", endpoint=service) == [1.0, 1.0]


def test_stdin_stdout_cases_through_the_service_equal_the_local_ones(service, metrics):
    # a whole program travels as it is, with the case's input as the request's stdin
    cases = {"language": "python", "test_cases": [{"input": "1 2\n", "output": "3\n", "type": "stdin_stdout"},
                                                  {"input": "5 5\n", "output": "10\n", "type": "stdin_stdout"}]}
    completions = [block("a, b = map(int, input().split())\nprint(a + b)\n"),  # both cases: 1.0
                   block("a, b = map(int, input().split())\nprint(a * b)\n"),  # 1 * 2 = 2, 5 * 5 = 25: 0.0
                   block("a, b = map(int, input().split())\nassert a == 1\nprint(a + b)\n")]  # exit 1 on 5 5: 0.5
    remote = rewards.tests(completions, verification_info=[cases] * 3, sandbox="sandboxfusion", endpoint=service,
                           **metrics.kwargs())
    assert remote == [1.0, 0.0, 0.5]
    assert metrics.extra["code.tests/cause"] == ["passed", "failed", "error"]
    assert remote == rewards.tests(completions, verification_info=[cases] * 3)
    body = request_body(Job("print(input())", mode="raw", stdin="hi\n"), Limits(), "t" * 32)
    assert (body["code"], body["stdin"]) == ("print(input())", "hi\n")


def test_hostile_code_sent_to_the_service_is_confined_there(service, metrics):
    # the service runs each program in the local sandbox: the harness's own verdicts survive
    # a completion that floods stdout, forges verdict lines and exits early
    forge = "import os\nprint('x' * 5_000_000)\nprint('0' * 32, 'test 0 pass')\nos._exit(0)\n"
    scores = rewards.tests([block(forge)], tests=[TESTS[:1]], sandbox="sandboxfusion", endpoint=service,
                           **metrics.kwargs())
    assert scores == [0.0] and metrics.extra["code.tests/cause"] == ["crashed"]


def test_an_unreachable_service_is_a_sandbox_error_not_a_zero(metrics):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scores = rewards.tests([block("def add(a, b):\n    return a + b\n")], tests=[TESTS], sandbox="sandboxfusion",
                           endpoint=f"http://127.0.0.1:{port}", **metrics.kwargs())
    assert scores == [None]
    assert metrics.metrics["code.tests/sandbox_errors"] == 1.0


def test_the_request_is_sandboxfusions_shape():
    body = request_body(Job("x = 1", ("assert x == 1",)), Limits(timeout=3.0, memory_mb=512), "t" * 32)
    assert set(body) == {"code", "language", "run_timeout", "compile_timeout", "memory_limit_MB", "stdin",
                         "files", "fetch_files"}
    assert (body["language"], body["run_timeout"], body["memory_limit_MB"]) == ("python", 3.0, 512)
    assert body["code"].endswith("\n") and "'token': '" + "t" * 32 + "'" in body["code"]
    compile(body["code"], "<program>", "exec")  # a valid program; compiling does not run it


def test_the_endpoint_must_be_a_url():
    with pytest.raises(ValueError, match=r"endpoint='localhost:8080': give the service's base URL"):
        rewards.tests([block("x = 1\n")], tests=[["assert x"]], sandbox="sandboxfusion", endpoint="localhost:8080")
