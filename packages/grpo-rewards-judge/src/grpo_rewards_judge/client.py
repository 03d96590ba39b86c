"""The judge's HTTP client: OpenAI-compatible chat completions (vLLM, SGLang, TGI, llama.cpp's
server, Ollama, ``transformers serve``, hosted APIs), standard library only.

- up to ``concurrency`` requests at once, on keep-alive connections (one per worker thread);
- each request bounded: ``timeout`` seconds without a byte from the server, at most
  :data:`MAX_BODY` bytes read;
- 429, 408 and 5xx answers, time-outs and dropped connections retried ``retries`` times with
  exponential backoff and jitter (a ``Retry-After`` of up to :data:`MAX_WAIT` seconds is
  honoured); a 401, 403 or 404 stops the batch at once (:class:`JudgeUnavailable`: the key, the
  address or the model is wrong), and so does a refused connection after its retries (no
  server there); another 4xx (a prompt too long) fails that item only;
- a judge that answered nothing is not asked again for :data:`COOLDOWN` seconds: grpo's failure
  policy retries a failed batch item by item, and each item then fails at once;
- the reward's own time limit (``health.reward_time_limit``, ``time_limit:``) bounds the whole
  call: when it interrupts the waiting thread, queued requests are dropped and those in flight
  are cut, so nothing keeps running after it;
- the API key is read from the environment variable named by ``api_key_env`` at each call and
  sent as ``Authorization: Bearer``; it is in no message, log line or file (it is blanked out
  of any text a server sends back).
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import random
import re
import socket
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

from . import parse

MAX_BODY = 4 << 20  # bytes of one answer read at most
MAX_WAIT = 30.0  # seconds of Retry-After honoured at most (backoff is capped there too)
COOLDOWN = 30.0  # seconds a judge that could answer nothing is not asked again (each call fails at once)
RETRY = frozenset({408, 425, 429, 500, 502, 503, 504})
FATAL = {401: "refused the API key", 403: "refused the request (forbidden)",
         404: "has no chat completions endpoint there, or no such model"}


class JudgeUnavailable(RuntimeError):
    """The judge cannot answer any request as configured (a 401/403/404, or no answer at all)."""


@dataclass(frozen=True)
class Endpoint:
    url: str  # the chat completions address
    api_key_env: str
    timeout: float
    retries: int
    backoff: float


@dataclass
class Reply:
    """One question's outcome: the judge's answer, or why there is none."""

    answer: str | None = None  # the judge's message (at most parse.MAX_ANSWER characters)
    p: float | None = None  # from log-probabilities: P(yes) or P(A), where the server gave them
    tokens: int = 0  # prompt + completion tokens the server reported (0 from the cache)
    requests: int = 0  # HTTP requests it took, retries included
    error: str | None = None  # no answer: why (after the retries)
    cached: bool = False
    item_only: bool = False  # no answer for this question alone (a 400: a prompt too long), the judge is up


def chat_url(url: str) -> str:
    """The chat completions address of ``url``: a server root (``http://host:8000``), its
    ``/v1``, or the full ``.../chat/completions``."""
    parts = urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must be the judge server's http(s) address, e.g. 'http://127.0.0.1:8000/v1', "
                         f"got {url!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"url {url!r} has a query, fragment or user:password part; give the plain address and "
                         f"put the key in an environment variable named by api_key_env")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        versioned = re.fullmatch(r"v\d+\w*", path.rsplit("/", 1)[-1])  # .../v1, .../v1beta
        path += "/chat/completions" if versioned else "/v1/chat/completions"
    return f"{parts.scheme}://{parts.netloc}{path}"


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "[key]") if secret else text


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return None if seconds is None or not seconds >= 0 else min(seconds, MAX_WAIT)


class _Pool:
    """``n`` daemon worker threads (a stalled request never keeps the process from exiting)."""

    def __init__(self, n: int):
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name=f"grpo-judge-{i}", daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        while True:
            future, fn, args = self.tasks.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                    future.set_exception(exc)

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        self.tasks.put((future, fn, args))
        return future


class _Call:
    """One batch's shared state: cancelled when the waiting thread is interrupted; the
    connections in flight, cut then."""

    def __init__(self):
        self.cancel = threading.Event()
        self.lock = threading.Lock()
        self.active: set[http.client.HTTPConnection] = set()

    def stop(self) -> None:
        self.cancel.set()
        with self.lock:
            for conn in list(self.active):
                sock = getattr(conn, "sock", None)
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass


class Client:
    """Requests to one endpoint, ``concurrency`` at a time."""

    def __init__(self, endpoint: Endpoint, concurrency: int):
        self.endpoint = endpoint
        parts = urlsplit(endpoint.url)
        self.https = parts.scheme == "https"
        # a url without a host is refused before any client is made (chat_url)
        self.host, self.port, self.path = cast(str, parts.hostname), parts.port, parts.path
        self.pool = _Pool(concurrency)
        self.local = threading.local()
        self.down_until, self.down_reason = 0.0, ""

    # ------------------------------------------------------------ a batch

    def ask(self, bodies: list[dict], soft: tuple[str, str] | None = None) -> list[Reply]:
        """One :class:`Reply` per request body, in order. ``soft``: the (positive, negative)
        answer words whose log-probabilities give ``Reply.p``."""
        if not bodies:
            return []
        left = self.down_until - time.monotonic()
        if left > 0:  # grpo's failure policy retries a failed batch item by item: each fails at once
            raise JudgeUnavailable(f"{self.down_reason} (not asked again for {left:.0f}s)")
        call = _Call()
        key = os.environ.get(self.endpoint.api_key_env) or None
        futures = [self.pool.submit(self._one, json.dumps(b).encode("utf-8"), soft, key, call) for b in bodies]
        try:
            return [f.result() for f in futures]
        except BaseException as exc:  # a time limit (RewardTimeout), Ctrl-C, or a JudgeUnavailable
            for f in futures:
                f.cancel()
            call.stop()
            if isinstance(exc, JudgeUnavailable):
                self.mark_down(str(exc))
            raise

    def mark_down(self, reason: str) -> None:
        """The judge answered nothing: for :data:`COOLDOWN` seconds every call fails at once
        with ``reason`` (a dead server would otherwise cost its retries on every item)."""
        self.down_until, self.down_reason = time.monotonic() + COOLDOWN, reason

    # ------------------------------------------------------------ one request, retried

    def _one(self, body: bytes, soft: tuple[str, str] | None, key: str | None, call: _Call) -> Reply:
        e = self.endpoint
        why, requests, tokens, refused = "", 0, 0, False
        for attempt in range(e.retries + 1):
            if call.cancel.is_set():
                return Reply(error="cancelled (the reward's time limit)", requests=requests)
            wait, refused = None, False
            requests += 1
            try:
                status, headers, data = self._post(body, key, call)
            except TimeoutError:
                why = f"no answer within {e.timeout:g}s"
            except (OSError, http.client.HTTPException) as exc:
                why = f"cannot be reached ({type(exc).__name__}: {_redact(str(exc), key)[:200]})"
                refused = isinstance(exc, (ConnectionRefusedError, socket.gaierror))
            else:
                if status == 200:
                    reply = self._reply(data, soft, key)
                    reply.requests, reply.tokens = requests, reply.tokens + tokens
                    return reply
                detail = _redact(data[:300].decode("utf-8", "replace"), key).strip()
                if status in FATAL:
                    raise JudgeUnavailable(f"the judge at {e.url} {FATAL[status]} ({status}: {detail!r:.200}); "
                                           + _fix(status, e.api_key_env))
                why = f"answered {status}: {detail!r:.200}"
                if status not in RETRY:
                    return Reply(error=why, requests=requests, item_only=True)
                wait = _retry_after(headers.get("retry-after"))
            if attempt < e.retries:
                delay = wait if wait is not None else min(e.backoff * 2 ** attempt, MAX_WAIT) * random.uniform(0.5, 1)
                if call.cancel.wait(delay):
                    return Reply(error="cancelled (the reward's time limit)", requests=requests)
        if refused:  # no server there: every other request of the batch would wait out its retries too
            raise JudgeUnavailable(f"the judge at {e.url} {why} after {e.retries + 1} tries; is the server running "
                                   f"there (url=)?")
        return Reply(error=f"{why} ({e.retries + 1} tries)", requests=requests)

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.endpoint.timeout)
            self.local.conn = conn
        return conn

    def _post(self, body: bytes, key: str | None, call: _Call) -> tuple[int, dict, bytes]:
        """One request; a kept-alive connection the server has meanwhile closed is opened
        again once, at no cost to the retries."""
        conn = self._connection()
        reused = conn.sock is not None
        try:
            return self._exchange(conn, body, key, call)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused or call.cancel.is_set():
                raise
            return self._exchange(self._connection(), body, key, call)

    def _exchange(self, conn: http.client.HTTPConnection, body: bytes, key: str | None,
                  call: _Call) -> tuple[int, dict, bytes]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        with call.lock:
            call.active.add(conn)
        try:
            conn.request("POST", self.path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read(MAX_BODY + 1)
            if len(data) > MAX_BODY:
                raise http.client.HTTPException(f"an answer larger than {MAX_BODY >> 20} MiB")
            found = {k.lower(): v for k, v in answer.getheaders()}
            if answer.will_close:
                conn.close()
            return answer.status, found, data
        except BaseException:
            conn.close()
            self.local.conn = None
            raise
        finally:
            with call.lock:
                call.active.discard(conn)

    def _reply(self, data: bytes, soft: tuple[str, str] | None, key: str | None) -> Reply:
        """The answer of a 200: its message, usage and log-probabilities, each checked."""
        try:
            doc = json.loads(data)
            choice = doc["choices"][0]
            message = choice.get("message") or {}
            content = message.get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return Reply(error=f"answered 200 but not with a chat completion: {_redact(data[:200].decode('utf-8', 'replace'), key)!r}")
        if content is not None and not isinstance(content, str):
            content = None
        usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
        tokens = sum(v for v in (usage.get("prompt_tokens"), usage.get("completion_tokens"))
                     if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**9)
        p = parse.soft(choice.get("logprobs"), *soft) if soft and isinstance(choice, dict) else None
        return Reply(answer=(content or "")[:parse.MAX_ANSWER], p=p, tokens=tokens)


def _fix(status: int, env: str) -> str:
    if status == 401:
        return (f"set the environment variable {env} to a valid key (or api_key_env= to the variable that holds "
                f"it)")
    if status == 404:
        return "check url (the server's /v1 address) and model (a name the server lists at /v1/models)"
    return "check the key's permissions and the model name"


_clients: dict[tuple, Client] = {}
_clients_lock = threading.Lock()


def client(endpoint: Endpoint, concurrency: int) -> Client:
    """The process's client for ``endpoint`` (threads start on first use; a forked process
    makes its own)."""
    k = (endpoint, concurrency, os.getpid())
    with _clients_lock:
        if k not in _clients:
            _clients[k] = Client(endpoint, concurrency)
        return _clients[k]


def reset() -> None:
    """Every judge counts as up again (:func:`grpo_rewards_judge.ask.reset`: tests, a new run in
    the same process)."""
    with _clients_lock:
        for c in _clients.values():
            c.down_until = 0.0


__all__ = ["Client", "Endpoint", "JudgeUnavailable", "Reply", "chat_url", "client", "MAX_BODY", "RETRY"]
