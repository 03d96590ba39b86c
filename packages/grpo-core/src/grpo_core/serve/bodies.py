"""Reading a request body into a batch, bounded: every problem is a :class:`BadRequest`
whose message names it (the server answers it as a 4xx and goes on serving)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from grpo_core.base import jsontext
from grpo_core.base.params import reserved_columns_problem
from grpo_core.serve.responses import Ends, response_of


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
    notes: list[dict] | None = None  # per item, what the server read differently or refused ({"query": why})
    skipped: frozenset[int] = field(default_factory=frozenset)  # items not scored (every reward None)
    group_size: int | list[int] | None = None  # the batch's groups, for group rewards (rewards/groups.py)


SCORE_KEYS = {"completions", "prompts", "columns", "group_size"}
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
        data = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from None
    except jsontext.JsonNumberError as exc:
        raise BadRequest(f"the body holds {exc}") from None
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


def _group_size(value, n: int) -> int | list[int] | None:
    """``group_size``: completions per group (an int dividing the batch), or each group's
    size in turn (a list adding up to it); a group reward scores each group together."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        if n % value:
            raise BadRequest(f"group_size {value} does not divide the {n} completions into whole groups.")
        return value
    if (isinstance(value, list) and value and len(value) <= n
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        if sum(value) != n:
            raise BadRequest(f"the group sizes in 'group_size' add up to {sum(value)}, not to the {n} completions.")
        return value
    raise BadRequest(f"'group_size' must be a positive whole number or a list of them (each group's size in "
                     f"turn), got {json.dumps(value)[:60]}.")


def score_batch_of(data: dict, limits: Limits, required: list[str], ends: Ends = Ends()) -> Batch:
    """``POST /score``: ``{"completions": [...], "prompts": [...]?, "columns": {name: [...]}?,
    "group_size": G or [sizes]?}``; end-of-sequence markers at a completion's end are removed
    (``responses.Ends``)."""
    _unknown(data, SCORE_KEYS)
    if "completions" not in data:
        raise BadRequest("'completions' is missing: send {\"completions\": [...], \"columns\": {...}}.")
    completions = [ends.trim_completion(_completion(c, i, limits, "completions"))
                   for i, c in enumerate(_list(data, "completions", limits))]
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
    problem = reserved_columns_problem(out)
    if problem:
        raise BadRequest(f"'columns': {problem}")
    _require(out, required)
    return Batch(completions, prompts, out, group_size=_group_size(data.get("group_size"), n))


def openrlhf_batch_of(data: dict, limits: Limits, required: list[str], label_column: str,
                      ends: Ends = Ends()) -> Batch:
    """OpenRLHF's ``POST /get_reward``: ``{"query": [prompt+response...], "prompts": [...], "labels": [...]}``.
    The completion is the response the query holds (``responses.response_of``: past its
    prompt, also when OpenRLHF cut the prompt's start) without its end markers. A response
    past ``max_chars`` is not scored (OpenRLHF turns a 4xx into a sample with no reward)."""
    _unknown(data, OPENRLHF_KEYS)
    if "query" not in data:
        raise BadRequest("'query' is missing: OpenRLHF sends {\"query\": [...], \"prompts\": [...], \"labels\": [...]}.")
    queries = _list(data, "query", limits)
    prompts = _list(data, "prompts", limits, len(queries)) if data.get("prompts") is not None else None
    for key, values in (("query", queries), ("prompts", prompts or ())):
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise BadRequest(f"{key}[{i}] must be a string, got {type(v).__name__}.")
    completions, notes, skipped = [], [], set()
    for i, q in enumerate(queries):
        response, note = response_of(q, prompts[i] if prompts else None)
        response = ends.trim(response)
        if len(response) > limits.max_chars:
            skipped.add(i)
            response, note = "", (f"the response has {len(response)} characters, more than the limit of "
                                  f"{limits.max_chars} (--max-chars): not scored")
        completions.append(response)
        notes.append({"query": note} if note else {})
    columns = {}
    if data.get("labels") is not None:
        labels = columns[label_column] = _list(data, "labels", limits, len(queries))
        if label_column in required:
            for i, label in enumerate(labels):
                if label in ("", None):
                    notes[i]["labels"] = "empty: OpenRLHF sends '' unless --data.label_key names the dataset's column"
    _require(columns, required)
    return Batch(completions, prompts, columns, notes, frozenset(skipped))
