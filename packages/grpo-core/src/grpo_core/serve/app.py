"""The reward server's endpoints, a Starlette application:

- ``GET /health``: ``{"status": "ok", ...}`` (no token needed, says nothing of the rewards);
- ``GET /rewards``: each reward with its weight, time limit, distribution, version and
  source SHA-256 (as ``manifest.json`` records them);
- ``POST /score``: grpo's endpoint, each reward's scores, the weighted total and per-item notes;
- ``POST /get_reward``: OpenRLHF's remote reward protocol, ``{"rewards": [...], ...}``
  (``openrlhf.py``: every value a number OpenRLHF can turn into a tensor).

Scoring runs in one of ``--workers`` threads; the requests waiting for one wait in the
event loop, at most ``--queue`` of them (429 past that, or past the pool's wait), so the
server's threads and memory stay flat however many clients connect. A bad body is a 4xx
naming the problem."""

from __future__ import annotations

import hmac
import json
import math
import time

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from grpo_core.base.version import __version__
from grpo_core.serve import openrlhf
from grpo_core.serve.bodies import (
    BadRequest,
    Batch,
    Limits,
    openrlhf_batch_of,
    parse_json,
    score_batch_of,
)
from grpo_core.serve.responses import Ends
from grpo_core.serve.scoring import Busy, Pool


def _json(data, status: int = 200) -> Response:
    """JSON with NaN/inf as null (strict JSON clients reject NaN). Scores are finite or None
    already (the guard), so the answer is walked only when it holds one that is not."""
    try:
        text = json.dumps(data, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(data))
    return Response(text, status_code=status, media_type="application/json")


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def _error(message: str, status: int) -> Response:
    return _json({"error": message, "status": status}, status)


async def _body(request: Request, limits: Limits) -> bytes:
    """The body, read in chunks and refused as soon as it passes ``max_body``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body:
        raise BadRequest(f"the body is {declared} bytes, more than the limit of {limits.max_body} (--max-body).", 413)
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if kind not in ("application/json", ""):
        raise BadRequest(f"Content-Type is {kind!r}; send application/json.", 415)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.max_body:
            raise BadRequest(f"the body passes the limit of {limits.max_body} bytes (--max-body).", 413)
        chunks.append(chunk)
    return b"".join(chunks)


class Server:
    """The application's state: the pool, the limits, the token, counters."""

    def __init__(self, pool: Pool, limits: Limits = Limits(), token: str | None = None, label_column: str = "answer",
                 ends: Ends = Ends(), scale: openrlhf.ScoresScale | None = None):
        self.pool, self.limits, self.token, self.label_column = pool, limits, token, label_column
        self.ends = ends
        self.scale = scale or openrlhf.ScoresScale.choose("auto", pool.names, pool.rewards.weights, pool.ranges)
        self.started = time.time()
        self.served = 0
        self.refused = 0
        self.waiting = 0  # requests scoring or waiting for a worker thread
        self.limiter = anyio.CapacityLimiter(pool.workers)

    def authorised(self, request: Request) -> bool:
        if not self.token:
            return True
        given = request.headers.get("authorization", "")
        given = given[7:] if given.lower().startswith("bearer ") else request.headers.get("x-grpo-token", "")
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def health(self, request: Request) -> Response:
        return _json({"status": "ok", "version": __version__, "uptime_s": round(time.time() - self.started, 1),
                      "served": self.served, "refused": self.refused})

    async def rewards(self, request: Request) -> Response:
        if not self.authorised(request):
            return self._unauthorised()
        return _json({"rewards": self.pool.describe(), "required_columns": self.pool.required,
                      "label_column": self.label_column, "version": __version__})

    async def score(self, request: Request) -> Response:
        return await self._scored(request, self._grpo_answer)

    async def get_reward(self, request: Request) -> Response:
        return await self._scored(request, self._openrlhf_answer)

    async def _scored(self, request: Request, answer) -> Response:
        if not self.authorised(request):
            return self._unauthorised()
        try:
            data = parse_json(await _body(request, self.limits))
            result = await answer(data)
        except BadRequest as exc:
            self.refused += 1
            return _error(str(exc), exc.status)
        except Busy as exc:
            self.refused += 1
            return _error(str(exc), 429)
        self.served += 1
        return _json(result)

    async def _grpo_answer(self, data: dict) -> dict:
        batch = score_batch_of(data, self.limits, self.pool.required, self.ends)
        out = await self._score(batch)
        return {"scores": out["scores"], "total": out["total"], "notes": out["notes"], "extras": out["extras"],
                "metrics": out["metrics"], "weights": dict(zip(self.pool.names, self.pool.rewards.weights))}

    async def _openrlhf_answer(self, data: dict) -> dict:
        batch = openrlhf_batch_of(data, self.limits, self.pool.required, self.label_column, self.ends)
        return openrlhf.answer(await self._score(batch), self.scale)

    async def _score(self, batch: Batch) -> dict:
        """The pool's answer for the batch's items, the skipped ones scored None by every
        reward, the batch's own notes beside the rewards'."""
        n = len(batch.completions)
        keep = [i for i in range(n) if i not in batch.skipped]
        if len(keep) == n:
            out = await self._run(batch.completions, batch.prompts, batch.columns, batch.group_size)
        else:
            out = _spread(await self._score(_part(batch, keep)) if keep else None, keep, n, self.pool.names)
        for mine, theirs in zip(batch.notes or (), out["notes"]):
            theirs.update(mine)
        return out

    async def _run(self, *args) -> dict:
        """``pool.score(*args)`` in a worker thread, once one of ``--workers`` is free; a
        request waits for it here in the event loop, not in a thread of its own."""
        pool = self.pool
        if self.waiting >= pool.workers + pool.queue_size:
            raise Busy(f"the server is full: {pool.workers} requests scoring and {pool.queue_size} waiting "
                       f"(--workers, --queue); retry later.")
        self.waiting += 1
        try:
            with anyio.move_on_after(pool.wait) as waited:  # bounds the wait, not the scoring
                await self.limiter.acquire()
            if waited.cancelled_caught:
                raise Busy(f"no worker was free within {pool.wait:g}s; retry later.")
            try:
                return await anyio.to_thread.run_sync(pool.score, *args)
            finally:
                self.limiter.release()
        finally:
            self.waiting -= 1

    def _unauthorised(self) -> Response:
        self.refused += 1
        return Response(json.dumps({"error": "a token is required: send 'Authorization: Bearer <token>'.",
                                    "status": 401}), status_code=401, media_type="application/json",
                        headers={"WWW-Authenticate": "Bearer"})


def _part(batch: Batch, keep: list[int]) -> Batch:
    def pick(values):
        return [values[i] for i in keep]

    return Batch(pick(batch.completions), pick(batch.prompts) if batch.prompts is not None else None,
                 {k: pick(v) for k, v in batch.columns.items()})


def _spread(out: dict | None, keep: list[int], n: int, names: list[str]) -> dict:
    """A part's answer laid out over the whole batch: None (total 0.0) where it was not scored."""
    def full(values, missing):
        laid = [missing() for _ in range(n)]
        for i, v in zip(keep, values):
            laid[i] = v
        return laid

    out = out or {"scores": {name: [] for name in names}, "total": [], "notes": [], "extras": {}, "metrics": {}}
    return {"scores": {k: full(v, lambda: None) for k, v in out["scores"].items()},
            "total": full(out["total"], float), "notes": full(out["notes"], dict),
            "extras": {k: full(v, lambda: None) for k, v in out["extras"].items()}, "metrics": out["metrics"]}


async def _not_found(request: Request, exc) -> Response:
    return _error(f"no endpoint {request.method} {request.url.path}; see GET /health, GET /rewards, "
                  f"POST /score, POST /get_reward.", getattr(exc, "status_code", 404))


def build_app(server: Server) -> Starlette:
    routes = [Route("/health", server.health, methods=["GET"]),
              Route("/rewards", server.rewards, methods=["GET"]),
              Route("/score", server.score, methods=["POST"]),
              Route("/get_reward", server.get_reward, methods=["POST"])]
    app = Starlette(routes=routes, exception_handlers={404: _not_found, 405: _not_found})
    app.state.server = server
    return app
