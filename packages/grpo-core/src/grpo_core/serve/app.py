"""The reward server's endpoints, a Starlette application:

- ``GET /health``: ``{"status": "ok", ...}`` (no token needed, says nothing of the rewards);
- ``GET /rewards``: each reward with its weight, time limit, distribution, version and
  source SHA-256 (as ``manifest.json`` records them);
- ``POST /score``: grpo's endpoint, each reward's scores, the weighted total and per-item notes;
- ``POST /get_reward``: OpenRLHF's remote reward protocol, ``{"rewards": [...], ...}``.

Scoring runs in a worker thread (``Pool``: bounded slots and queue, 429 when full);
a bad body is a 4xx naming the problem."""

from __future__ import annotations

import hmac
import json
import math
import time

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from grpo_core.base.version import __version__
from grpo_core.serve.bodies import BadRequest, Limits, openrlhf_batch_of, parse_json, score_batch_of
from grpo_core.serve.scoring import Busy, Pool


def _json(data, status: int = 200) -> Response:
    """JSON with NaN/inf as null (strict JSON clients reject NaN)."""
    return Response(json.dumps(_finite(data)), status_code=status, media_type="application/json")


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

    def __init__(self, pool: Pool, limits: Limits = Limits(), token: str | None = None, label_column: str = "answer"):
        self.pool, self.limits, self.token, self.label_column = pool, limits, token, label_column
        self.started = time.time()
        self.served = 0
        self.refused = 0

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
        batch = score_batch_of(data, self.limits, self.pool.required)
        out = await run_in_threadpool(self.pool.score, batch.completions, batch.prompts, batch.columns)
        return {"scores": out["scores"], "total": out["total"], "notes": out["notes"], "extras": out["extras"],
                "weights": dict(zip(self.pool.names, self.pool.rewards.weights))}

    async def _openrlhf_answer(self, data: dict) -> dict:
        batch = openrlhf_batch_of(data, self.limits, self.pool.required, self.label_column)
        out = await run_in_threadpool(self.pool.score, batch.completions, batch.prompts, batch.columns)
        logs = {name: values for name, values in out["scores"].items()}
        return {"rewards": out["total"], "scores": out["total"], "extra_logs": logs}

    def _unauthorised(self) -> Response:
        self.refused += 1
        return Response(json.dumps({"error": "a token is required: send 'Authorization: Bearer <token>'.",
                                    "status": 401}), status_code=401, media_type="application/json",
                        headers={"WWW-Authenticate": "Bearer"})


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
