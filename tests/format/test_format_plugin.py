"""The plugin as a user meets it: registration by name, the xml prompt, TRL's calling
convention, pickling, import cost, linear time on hostile input, the contract suite."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
import time

import pytest

import grpo_rewards_format

NAMES = [
    "format.json",
    "format.reasoning_steps",
    "format.tag_count",
    "format.think_answer",
    "format.think_answer_r1",
    "format.xml_incremental",
    "format.xml_soft",
    "format.xml_strict",
    "length.ideal",
    "length.relative",
    "length.soft_overlong",
    "repetition.ngram",
]

# One non-default binding per reward, as a config would write it.
PARAMS = {
    "format.json": {"schema": {"type": "object"}, "max_chars": 5000},
    "format.reasoning_steps": {"min_steps": 2},
    "format.tag_count": {"think_tag": "reasoning"},
    "format.think_answer": {"min_think_chars": 5, "think_tag": "reasoning"},
    "format.think_answer_r1": {"answer_tag": "solution"},
    "format.xml_incremental": {"trailing_penalty": 0.01},
    "format.xml_soft": {"answer_tag": "solution"},
    "format.xml_strict": {"think_tag": "reasoning", "answer_tag": "solution"},
    "length.ideal": {"target": 300, "unit": "words"},
    "length.soft_overlong": {"max_length": 64, "cache": 16},
    "length.relative": {"unit": "words"},
    "repetition.ngram": {"n": 2, "max_penalty": -0.5, "language": "en"},
}


def test_registers_every_reward_with_its_docstring_summary(register_plugin):
    from grpo_core import list_rewards

    register_plugin(grpo_rewards_format)
    entries = {e.name: e for e in list_rewards() if e.plugin == "grpo_rewards_format"}
    assert sorted(entries) == NAMES
    for name, entry in entries.items():
        doc = inspect.getdoc(entry.obj)
        assert entry.description == doc.splitlines()[0], name
        assert "reward" in doc and "Range" in doc, f"{name}: formula and range must be documented"


def test_every_reward_declares_its_range(reward):
    """grpo check takes the high end as full marks: ranges as the docstrings state them."""
    expected = {name: (0.0, 1.0) for name in NAMES if name.startswith("format.")}
    expected.update({"length.ideal": (-1.0, 0.0), "length.soft_overlong": (-1.0, 0.0), "length.relative": (-0.5, 0.5)})
    expected["repetition.ngram"] = (-1.0, 0.0)  # [max_penalty, 0], max_penalty=-1.0 by default
    assert {name: reward(name).range for name in NAMES} == expected
    assert reward("repetition.ngram", max_penalty=-0.5).range == (-0.5, 0.0)


def test_range_functions_default_as_their_rewards_do():
    """A range function gets only the parameters a config set: its defaults must be the reward's."""
    for name, declared in grpo_rewards_format.RANGES.items():
        if not callable(declared):
            continue
        reward_params = inspect.signature(grpo_rewards_format.REWARDS[name]).parameters
        for p in inspect.signature(declared).parameters.values():
            if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD:
                assert p.default == reward_params[p.name].default, (name, p.name)


def test_every_parameter_is_annotated_and_none_is_a_required_column(reward):
    for name in NAMES:
        r = reward(name)
        assert r.required_columns == (), name
        sig = inspect.signature(r.func)
        for p in sig.parameters.values():
            if p.default is not p.empty:
                assert p.annotation is not p.empty, f"{name}: parameter {p.name} has no annotation"
        assert any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()), name


def test_trl_calling_convention(reward):
    """TRL calls reward_func(prompts=..., completions=..., completion_ids=..., **columns,
    trainer_state=..., log_metric=..., log_extra=...)."""
    completions = [
        [
            {
                "role": "assistant",
                "content": "<think>plenty of reasoning here</think><answer>{}</answer>",
            }
        ],
        [{"role": "assistant", "content": "no format at all, just words words words"}],
    ]
    kwargs = dict(
        prompts=[[{"role": "user", "content": "q"}]] * 2,
        completions=completions,
        completion_ids=[[1, 2, 3], [4, 4, 4, 4]],
        answer=["{}", "x"],
        question=["q", "q"],
        trainer_state=object(),
        log_metric=lambda *a, **k: None,
        log_extra=lambda *a, **k: None,
    )
    for name in NAMES:
        for params in ({}, PARAMS[name]):
            values = reward(name, **params)(**kwargs)
            assert len(values) == 2 and all(type(v) is float for v in values), (name, values)


def test_compose_rewards_by_spec(register_plugin):
    from grpo_core import compose_rewards

    register_plugin(grpo_rewards_format)
    funcs, weights = compose_rewards(
        ["format.xml_strict:1.0", "length.ideal(target=300):0.5", "repetition.ngram(n=4)"]
    )
    assert [f.__name__ for f in funcs] == ["format.xml_strict", "length.ideal", "repetition.ngram"]
    assert weights == [1.0, 0.5, 1.0]
    assert funcs[1](["x" * 150]) == [-0.5]


@pytest.mark.parametrize("name", NAMES)
def test_bound_rewards_pickle(reward, name):
    r = reward(name, **PARAMS[name])
    texts = ["<reasoning>abcdef</reasoning><solution>{}</solution>", "a b a b a b " * 10]
    clone = pickle.loads(pickle.dumps(r))
    assert clone.__name__ == name and clone.params == PARAMS[name]
    assert clone(texts) == r(texts)


def test_xml_system_prompt_is_registered(register_plugin):
    from grpo_core import list_system_prompts
    from grpo_core.data.datasets import resolve_system_prompt

    register_plugin(grpo_rewards_format)
    entries = {e.name: e for e in list_system_prompts()}
    assert entries["xml"].plugin == "grpo_rewards_format"
    text, template = resolve_system_prompt("xml")
    assert "<think>" in text and "</answer>" in text
    assert template[0] == "<think>\n{rationale}\n</think>\n<answer>\n{answer}\n</answer>"


def test_xml_few_shot_turns_score_full_marks(reward):
    """The prompt and the rewards agree: a few-shot turn built from the template is perfect."""
    from grpo_core import build_prompt
    from grpo_core.data.datasets import resolve_system_prompt

    text, template = resolve_system_prompt("xml")
    example = {"question": "2+2?", "rationale": "Two plus two makes four, so 4.", "answer": "4"}
    messages = build_prompt("3+3?", text, [example], template)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    shot = messages[2]["content"]
    for name in (
        "format.xml_strict",
        "format.xml_soft",
        "format.xml_incremental",
        "format.think_answer",
    ):
        assert reward(name)([shot]) == [1.0], name
    # The layout the prompt spells out is itself a well-formed (if empty-content) answer.
    layout = text[text.index("<think>\n") :]
    assert reward("format.xml_strict")([layout]) == [1.0]


def test_import_is_light():
    code = (
        "import sys, time\n"
        "import grpo_core\n"
        "t = time.perf_counter(); import grpo_rewards_format; dt = time.perf_counter() - t\n"
        "heavy = [m for m in ('jsonschema', 'torch', 'trl', 'transformers', 'datasets', 'numpy')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(dt)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)  # asserts inside
    # (how long the import takes is bench/cold_start.py's to measure)


HOSTILE = {
    "100k <think> tags": "<think>" * 100_000,
    "100k open/close pairs": "<think></think><answer>" * 100_000,
    "1 MB without tags": ("lorem ipsum dolor sit amet " * 40_000)[:1_000_000],
    "1 MB of '<'": "<" * 1_000_000,
    "deep JSON": "[" * 200_000 + "]" * 200_000,
    "1 MB fenced": "```json\n" + "1," * 500_000,
}


@pytest.mark.parametrize("name", NAMES)
def test_hostile_inputs_are_linear_time(reward, name):
    """Quadratic parsing of 1 MB would take minutes; linear takes milliseconds."""
    r = reward(name)
    ids = [list(range(len(t) // 4)) for t in HOSTILE.values()]
    start = time.perf_counter()
    with_ids = r(list(HOSTILE.values()), completion_ids=ids)
    without_ids = r(list(HOSTILE.values()))
    elapsed = time.perf_counter() - start
    assert len(with_ids) == len(without_ids) == len(HOSTILE)
    assert elapsed < 5.0, f"{name} took {elapsed:.1f}s on hostile input"


def test_every_reward_passes_the_core_contract_suite(reward):
    from grpo_core.contract import check_reward

    for name in NAMES:
        for params in ({}, PARAMS[name]):
            results = check_reward(reward(name, **params))
            assert results, name
            failed = {res.name: res.message for res in results if not res.ok}
            assert failed == {}, (name, params, failed)


def test_xml_few_shot_without_rationale_still_scores_full_marks(register_plugin):
    import grpo_rewards_format
    from grpo_core.data.datasets import build_prompt, resolve_system_prompt

    register_plugin(grpo_rewards_format)
    text, template = resolve_system_prompt("xml")
    turns = build_prompt("Q2", text, [{"question": "Q1", "answer": "7"}], template)
    example = turns[2]["content"]
    assert example.endswith("<answer>\n7\n</answer>")
    from grpo_core import get_reward

    for name in ("format.xml_strict", "format.think_answer", "format.xml_incremental"):
        assert get_reward(name)([example]) == [1.0], name
