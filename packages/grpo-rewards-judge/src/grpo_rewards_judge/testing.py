"""A judge server for tests, with no model: :class:`FakeJudge` speaks the OpenAI chat API on
127.0.0.1 (a port of its own) and answers with a function of yours, so a config's judge
rewards, their retries and time limits, and ``grpo check``'s probes can be tried offline::

    from grpo_rewards_judge.testing import FakeJudge, Answer, exact

    with FakeJudge(exact) as judge:                  # an honest judge: the last line against the reference
        grpo_core.get_reward("judge.yesno", url=judge.url, cache="off")([...], answer=[...])
    with FakeJudge(lambda r: Answer(status=429)):    # always rate-limited
        ...

``reply(request)`` gets a :class:`Request` (the body, the messages, the response and the
reference read back out of the default templates) and returns the judge's text or an
:class:`Answer` (a status, headers, a delay, log-probabilities). The server counts requests
and the most it had in flight at once. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_REQUEST = 8 << 20


@dataclass
class Answer:
    """What the fake judge answers: ``content`` with ``status`` 200, or another status."""

    content: str | None = ""
    status: int = 200
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (a stalling server: a long one)
    logprobs: list[tuple[str, float]] | None = None  # the first answer token's alternatives (token, logprob)


@dataclass
class Request:
    body: dict
    authorization: str | None

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages") or []

    @property
    def user(self) -> str:
        users = [m.get("content") or "" for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    def block(self, tag: str) -> str | None:
        """The text of the ``<tag>`` block of the default templates (None without one)."""
        found = re.search(rf"<{tag}>\n(.*)\n</{tag}>", self.user, re.S)
        return found.group(1) if found else None

    @property
    def response(self) -> str:
        return self.block("response") or ""

    @property
    def reference(self) -> str | None:
        return self.block("reference")

    @property
    def kind(self) -> str:
        """What the default template asks: ``score``, ``yesno`` or ``pairwise``."""
        if "A or B" in self.user[-80:]:
            return "pairwise"
        return "score" if '"Score: N"' in self.user else "yesno"

    @property
    def scale(self) -> int:
        found = re.search(r"from 0 to (\d+)", self.user)
        return int(found.group(1)) if found else 10


def final_answer(text: str) -> str:
    """The last non-empty line, without an ``Answer:`` label."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return re.sub(r"^answer\s*:\s*", "", last, flags=re.I).strip()


def verdict(request: Request, right: Callable[[str], bool]) -> str:
    """The answer of a judge that finds a response good when ``right(response)``: in the
    format the default template asks (yes/no, a score, A/B)."""
    if request.kind == "pairwise":
        first = right(request.block("response_a") or "")
        second = right(request.block("response_b") or "")
        return "A" if first or not second else "B"
    good = right(request.response)
    if request.kind == "score":
        return f"Score: {request.scale if good else 0}"
    return "yes" if good else "no"


def exact(request: Request) -> str:
    """An honest judge: a response is right when its final line is the reference answer."""
    reference = (request.reference or "").strip()
    return verdict(request, lambda response: bool(reference) and final_answer(response) == reference)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that cut its connection (a time limit) is not an error of the server's


class FakeJudge:
    """An OpenAI-compatible chat server on ``127.0.0.1`` answering with ``reply(request)``."""

    def __init__(self, reply: Callable[[Request], Answer | str] = exact):
        self.reply = reply
        self.requests = 0  # chat requests received
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests it was answering at once
        self.authorization: list[str | None] = []  # each request's Authorization header, in order
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeJudge:
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[_Handler]:
        return type("Handler", (_Handler,), {"judge": self})


class _Handler(BaseHTTPRequestHandler):
    """One request to a :class:`FakeJudge` (``judge``: set on the subclass each server makes)."""

    protocol_version = "HTTP/1.1"
    judge: FakeJudge

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._send(200, {"object": "list", "data": [{"id": "fake-judge", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        size = int(self.headers.get("Content-Length") or 0)
        if size > MAX_REQUEST:
            self._send(413, {"error": "too large"}, close=True)
            return
        raw = self.rfile.read(size)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "not JSON"}})
            return
        with self.judge.lock:
            self.judge.requests += 1
            self.judge.in_flight += 1
            self.judge.max_in_flight = max(self.judge.max_in_flight, self.judge.in_flight)
            self.judge.authorization.append(self.headers.get("Authorization"))
        try:
            answer = self.judge.reply(Request(body, self.headers.get("Authorization")))
            answer = Answer(content=answer) if isinstance(answer, str) else answer
            if answer.delay and self.judge.closing.wait(answer.delay):
                return
            self._answer(body, answer)
        finally:
            with self.judge.lock:
                self.judge.in_flight -= 1

    def _answer(self, body: dict, answer: Answer) -> None:
        if answer.status != 200:
            self._send(answer.status, {"error": {"message": f"fake judge: {answer.status}"}}, answer.headers)
            return
        user = Request(body, None).user
        choice: dict = {"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": answer.content}}
        if answer.logprobs is not None and body.get("logprobs"):
            top = [{"token": t, "logprob": lp} for t, lp in answer.logprobs]
            choice["logprobs"] = {"content": [{"token": top[0]["token"] if top else "",
                                               "logprob": top[0]["logprob"] if top else 0.0,
                                               "top_logprobs": top}]}
        usage = {"prompt_tokens": len(user) // 4 + 1, "completion_tokens": len(answer.content or "") // 4 + 1}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self._send(200, {"id": "fake", "object": "chat.completion", "model": body.get("model") or "fake-judge",
                         "choices": [choice], "usage": usage}, answer.headers)

    def _send(self, status: int, doc: dict, headers: dict | None = None, close: bool = False) -> None:
        data = json.dumps(doc).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, str(v))
            if close:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass


@contextlib.contextmanager
def contract_judge() -> Iterator[dict]:
    """The parameters the reward contract suite calls the judge rewards with: an honest fake
    judge's url, no cache (docs/plugins.yaml, ``contract: server:``)."""
    with FakeJudge(exact) as judge:
        yield {"url": judge.url, "cache": "off"}


__all__ = ["Answer", "FakeJudge", "Request", "contract_judge", "exact", "final_answer", "verdict"]
