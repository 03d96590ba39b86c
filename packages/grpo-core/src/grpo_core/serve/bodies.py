"""Reading a request body into a batch, bounded: every problem is a :class:`BadRequest`
whose message names it (the server answers it as a 4xx and goes on serving)."""

from __future__ import annotations

import json
from dataclasses import dataclass


class BadRequest(Exception):
    """A request the server will not score: HTTP ``status`` and why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Limits:
    """Bounds on one request (``grpo serve --max-body``, ``--max-items``, ``--max-chars``)."""

    max_body: int = 8 * 1024 * 1024  # bytes
    max_items: int = 4096  # completions per request
    max_chars: int = 200_000  # characters per completion (all its messages together)


@dataclass
class Batch:
    completions: list
    prompts: list | None
    columns: dict[str, list]


SCORE_KEYS = {"completions", "prompts", "columns"}
OPENRLHF_KEYS = {"query", "prompts", "labels"}


def parse_json(body: bytes) -> dict:
    """The body as a JSON object (UTF-8, not empty, not nested past Python's limit)."""
    if not body.strip():
        raise BadRequest("the body is empty; send a JSON object.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not UTF-8 (byte {exc.start}); send JSON encoded as UTF-8.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from None
    except RecursionError:
        raise BadRequest("the body's JSON is nested too deeply.") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, got a JSON {type(data).__name__}.")
    return data


def _list(data: dict, key: str, limits: Limits, n: int | None = None) -> list:
    value = data[key]
    if not isinstance(value, list):
        raise BadRequest(f"'{key}' must be a list, got {type(value).__name__}.")
    if n is None and not value:
        raise BadRequest(f"'{key}' is empty; send at least one item.")
    if len(value) > limits.max_items:
        raise BadRequest(f"'{key}' has {len(value)} items, more than the server's limit of {limits.max_items} "
                         f"(--max-items); split the batch.", 413)
    if n is not None and len(value) != n:
        raise BadRequest(f"'{key}' has {len(value)} items for {n} completions; send one per completion.")
    return value


def _completion(value, i: int, limits: Limits, key: str):
    """A completion: text, or a list of {"role", "content"} messages."""
    if isinstance(value, str):
        size = len(value)
    elif isinstance(value, list) and value:
        size = 0
        for m in value:
            if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise BadRequest(f"{key}[{i}]: each message must be an object with string 'role' and 'content'.")
            size += len(m["content"])
    else:
        raise BadRequest(f"{key}[{i}] must be a string or a non-empty list of messages, got {type(value).__name__}.")
    if size > limits.max_chars:
        raise BadRequest(f"{key}[{i}] has {size} characters, more than the limit of {limits.max_chars} "
                         f"(--max-chars).", 413)
    return value


def _unknown(data: dict, known: set[str]) -> None:
    extra = sorted(set(data) - known)
    if extra:
        raise BadRequest(f"unknown field(s) {', '.join(map(repr, extra))}; this endpoint reads "
                         f"{', '.join(sorted(known))}.")


def _require(columns: dict, required: list[str]) -> None:
    missing = [c for c in required if c not in columns]
    if missing:
        raise BadRequest(f"missing column(s) {', '.join(map(repr, missing))} that the rewards read; "
                         f"send them in 'columns' as lists, one value per completion.", 422)


def score_batch_of(data: dict, limits: Limits, required: list[str]) -> Batch:
    """``POST /score``: ``{"completions": [...], "prompts": [...]?, "columns": {name: [...]}?}``."""
    _unknown(data, SCORE_KEYS)
    if "completions" not in data:
        raise BadRequest("'completions' is missing: send {\"completions\": [...], \"columns\": {...}}.")
    completions = [_completion(c, i, limits, "completions") for i, c in enumerate(_list(data, "completions", limits))]
    n = len(completions)
    prompts = None
    if data.get("prompts") is not None:
        prompts = [_completion(p, i, limits, "prompts") for i, p in enumerate(_list(data, "prompts", limits, n))]
    columns = data.get("columns") or {}
    if not isinstance(columns, dict):
        raise BadRequest(f"'columns' must be an object of lists, got {type(columns).__name__}.")
    out = {}
    for name, values in columns.items():
        if name in ("prompts", "completions", "completion_ids"):
            raise BadRequest(f"column '{name}' is reserved; send it as a top-level field.")
        if not isinstance(values, list):
            raise BadRequest(f"column '{name}' must be a list, got {type(values).__name__}.")
        if len(values) != n:
            raise BadRequest(f"column '{name}' has {len(values)} values for {n} completions.")
        out[name] = values
    _require(out, required)
    return Batch(completions, prompts, out)


def openrlhf_batch_of(data: dict, limits: Limits, required: list[str], label_column: str) -> Batch:
    """OpenRLHF's ``POST /get_reward``: ``{"query": [prompt+response...], "prompts": [...], "labels": [...]}``.
    The completion is the query past its prompt (the whole query when it does not start with it)."""
    _unknown(data, OPENRLHF_KEYS)
    if "query" not in data:
        raise BadRequest("'query' is missing: OpenRLHF sends {\"query\": [...], \"prompts\": [...], \"labels\": [...]}.")
    queries = _list(data, "query", limits)
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise BadRequest(f"query[{i}] must be a string, got {type(q).__name__}.")
        _completion(q, i, limits, "query")
    prompts = _list(data, "prompts", limits, len(queries)) if data.get("prompts") is not None else None
    for i, p in enumerate(prompts or ()):
        if not isinstance(p, str):
            raise BadRequest(f"prompts[{i}] must be a string, got {type(p).__name__}.")
    completions = ([q[len(p):] if q.startswith(p) else q for q, p in zip(queries, prompts)] if prompts
                   else list(queries))
    columns = {}
    if data.get("labels") is not None:
        columns[label_column] = _list(data, "labels", limits, len(queries))
    _require(columns, required)
    return Batch(completions, prompts, columns)
