"""``format.json``: the answer parses as JSON (and optionally fits a JSON Schema).

``json`` and ``jsonschema`` are imported on first use so that loading the plugin
stays cheap. Validators are built once per schema and cached.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grpo_core import text_reward

from .tags import tag_pair

# The opening of a fenced JSON block: ```json (any case), not ```jsonl.
_FENCE_RE = re.compile(r"```[ \t]*json\b", re.IGNORECASE)

_VALIDATORS: dict[str, Any] = {}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def answer_candidate(text: str, open_answer: str, close_answer: str) -> str:
    """The text judged as JSON: the first answer block if complete, else the whole
    text; then, inside it, the first ```json fenced block if there is a closed one."""
    i = text.find(open_answer)
    if i >= 0:
        j = text.find(close_answer, i + len(open_answer))
        if j >= 0:
            text = text[i + len(open_answer) : j]
    fence = _FENCE_RE.search(text)
    if fence is not None:
        end = text.find("```", fence.end())
        if end >= 0:
            text = text[fence.end() : end]
    return text


def _load_schema(schema: dict | str) -> tuple[str, Any]:
    import json

    if isinstance(schema, dict):
        return json.dumps(schema, sort_keys=True, default=str), schema
    if not isinstance(schema, str):
        raise ValueError(
            f"schema must be a JSON Schema dict or the path of a .json file, got "
            f"{type(schema).__name__} {schema!r}."
        )
    key = "path:" + schema
    if key in _VALIDATORS:
        return key, None
    path = Path(schema).expanduser()
    try:
        return key, json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read the JSON Schema file {schema!r}: {exc}.") from None
    except ValueError as exc:
        raise ValueError(f"JSON Schema file {schema!r} is not valid JSON: {exc}.") from None


def validator_for(schema: dict | str) -> Any:
    """A cached jsonschema validator for a schema dict or a path to a .json file."""
    key, doc = _load_schema(schema)
    validator = _VALIDATORS.get(key)
    if validator is None:
        import jsonschema

        if not isinstance(doc, (dict, bool)):
            raise ValueError(f"JSON Schema {schema!r} must be an object, got {type(doc).__name__}.")
        cls = jsonschema.validators.validator_for(doc)
        try:
            cls.check_schema(doc)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"{schema!r} is not a valid JSON Schema: {exc.message}.") from None
        _check_local_refs(doc, schema)
        validator = _VALIDATORS[key] = cls(doc)
    return validator


def _check_local_refs(doc: Any, schema: Any) -> None:
    """Every ``$ref`` inside the schema (``#/...``) must point at something in it:
    otherwise validation fails on the first answer that reaches it, mid-run."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                target = doc
                for part in filter(None, ref[1:].split("/")):
                    part = part.replace("~1", "/").replace("~0", "~")
                    if isinstance(target, dict) and part in target:
                        target = target[part]
                    elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                        target = target[int(part)]
                    else:
                        raise ValueError(f"$ref {ref!r} in JSON Schema {schema!r:.200} points at nothing in it.")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


@text_reward
def json_answer(
    completions: list,
    schema: dict | str | None = None,
    max_chars: int = 100_000,
    answer_tag: str = "answer",
    **kwargs,
) -> list[float]:
    """1.0 when the answer parses as JSON (and validates against `schema` when given).

    The answer is the first complete <answer>…</answer> block if there is one,
    else the whole completion; inside it, the first closed ```json fenced block
    wins if there is one. Any JSON value counts (use a schema such as
    {"type": "object"} to ask for an object); NaN/Infinity are rejected.
      without schema: reward = 1.0 if the answer parses, else 0.0
      with schema:    reward = 1.0 if it parses and validates,
                               0.5 if it parses but fails the schema
                                   (or nests too deeply to check),
                               0.0 if it does not parse.
    An answer longer than max_chars characters is not parsed and scores 0.0.
    Range {0.0, 0.5, 1.0}.

    Parameters: schema=None (a JSON Schema dict, or the path of a .json file;
    invalid schemas raise ValueError on first use), max_chars=100000, answer_tag.
    """
    import json

    open_answer, close_answer = tag_pair(answer_tag, "answer_tag")
    validator = validator_for(schema) if schema is not None else None
    out = []
    for text in completions:
        candidate = answer_candidate(text, open_answer, close_answer)
        if len(candidate) > max_chars or not candidate.strip():
            out.append(0.0)
            continue
        try:
            value = json.loads(candidate, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            out.append(0.0)
            continue
        if validator is None:
            out.append(1.0)
            continue
        try:
            out.append(1.0 if validator.is_valid(value) else 0.5)
        except RecursionError:
            out.append(0.5)
    return out
