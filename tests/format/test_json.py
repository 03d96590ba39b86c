"""format.json: which text is parsed, the schema levels, the size bound."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .shapes import chat

SCHEMA = {
    "type": "object",
    "required": ["a"],
    "properties": {"a": {"type": "integer"}},
}

PLAIN = [
    ('{"a": 1}', 1.0),
    ('  [1, 2, {"b": null}]\n', 1.0),
    ("42", 1.0),  # any JSON value counts (a schema can ask for an object)
    ('"text"', 1.0),
    ('<think>x</think><answer>{"a": [1, 2]}</answer>', 1.0),
    ("<answer>not json</answer>", 0.0),  # the block is the answer: no fallback
    ('<answer>{"a": 1}', 0.0),  # unclosed block: whole text is judged
    ('Here it is:\n```json\n{"a": 1}\n```\nDone.', 1.0),  # fenced block
    ('Here: ```JSON {"a":1}``` ok', 1.0),
    ('```jsonl\n{"a": 1}\n```', 0.0),  # not a ```json fence, whole text is not JSON
    ('```json\n{"a": 1}\n', 0.0),  # unclosed fence
    ("<answer>\n```json\n[1, 2]\n```\n</answer>", 1.0),  # fence inside the answer block
    ('<answer>{"a": 1}</answer> ```json\nnope\n```', 1.0),  # answer block first
    ('The answer is {"a": 1}', 0.0),
    ('{"a": 1} trailing', 0.0),
    ("NaN", 0.0),  # Python's json accepts these; JSON does not
    ('{"a": Infinity}', 0.0),
    ("-Infinity", 0.0),
    ("{'a': 1}", 0.0),  # Python literal, not JSON
    ("", 0.0),
    ("   \n", 0.0),
    ("[" * 100_000, 0.0),  # too deep to parse: no RecursionError escapes
]


@pytest.mark.parametrize("text,expected", PLAIN)
def test_json_without_schema(reward, text, expected):
    r = reward("format.json")
    assert r(completions=[text]) == [expected]
    assert r(completions=[chat(text)]) == [expected]


WITH_SCHEMA = [
    ('{"a": 1}', 1.0),
    ('<answer>{"a": 7, "b": "x"}</answer>', 1.0),
    ('{"a": "x"}', 0.5),  # valid JSON, wrong type
    ('{"b": 1}', 0.5),  # missing required key
    ("[1]", 0.5),
    ("nope", 0.0),
]


@pytest.mark.parametrize("text,expected", WITH_SCHEMA)
def test_json_with_schema_dict(reward, text, expected):
    assert reward("format.json", schema=SCHEMA)([text]) == [expected]


def test_json_with_schema_file(reward, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    texts = [t for t, _ in WITH_SCHEMA]
    assert reward("format.json", schema=str(path))(texts) == [v for _, v in WITH_SCHEMA]


def test_json_schema_from_a_spec_string(register_plugin):
    import grpo_rewards_format
    from grpo_core import compose_rewards

    register_plugin(grpo_rewards_format)
    (r,), _ = compose_rewards(["format.json(schema={'type': 'array', 'maxItems': 2})"])
    assert r(["[1, 2]", "[1, 2, 3]", "x"]) == [1.0, 0.5, 0.0]


def test_deeply_nested_json_fails_the_schema_not_the_run(reward):
    deep = "[" * 900 + "]" * 900  # parses, may be too deep for the validator
    schema = {"type": "array", "items": {"$ref": "#"}}
    assert reward("format.json", schema=schema)([deep])[0] in (0.5, 1.0)
    assert reward("format.json", schema={"type": "object"})([deep]) == [0.5]


@pytest.mark.parametrize(
    "schema,message",
    [
        ({"type": "nonsense"}, "is not a valid JSON Schema"),
        ("/no/such/schema.json", "cannot read the JSON Schema file"),
    ],
)
def test_bad_schemas_are_clear_errors(reward, schema, message):
    with pytest.raises(ValueError, match=message):
        reward("format.json", schema=schema)(["{}"])


def test_schema_file_that_is_not_json(reward, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        reward("format.json", schema=str(path))(["{}"])


def test_max_chars_bounds_the_parse(reward):
    text = '{"a": "' + "x" * 100 + '"}'  # 109 characters
    assert reward("format.json")([text]) == [1.0]
    assert reward("format.json", max_chars=109)([text]) == [1.0]
    assert reward("format.json", max_chars=108)([text]) == [0.0]
    # The bound applies to the extracted answer, not to the whole completion.
    wrapped = "<think>" + "y" * 500 + "</think><answer>" + text + "</answer>"
    assert reward("format.json", max_chars=109)([wrapped]) == [1.0]


def test_custom_answer_tag(reward):
    text = '<solution>{"a": 1}</solution>'
    assert reward("format.json", answer_tag="solution")([text]) == [1.0]
    assert reward("format.json")([text]) == [0.0]


def test_jsonschema_is_imported_only_when_a_schema_is_used():
    code = (
        "import sys, grpo_rewards_format as f\n"
        "assert 'jsonschema' not in sys.modules\n"
        "assert f.json_answer(['{}']) == [1.0]\n"
        "assert 'jsonschema' not in sys.modules\n"
        "assert f.json_answer(['{}'], schema={'type': 'object'}) == [1.0]\n"
        "assert 'jsonschema' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
