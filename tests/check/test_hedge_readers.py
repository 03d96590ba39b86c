"""`grpo check` fails a reward that reads answers and pays hedges as much as the gold,
declared a correctness reward or not (a containment reward that pays any text holding the
row's keyword); format and length rewards, which pay the gold and a wrong answer alike, are
not held to the hedges; a reward marked ``reads_answers=False`` is not either."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
import yaml

import grpo_core
from grpo_core.cli import main

ROWS = [("What is the capital of France?", "Paris"), ("What is the capital of Italy?", "Rome"),
        ("Which planet is red?", "Mars"), ("What is 2 + 2?", "4"), ("What is frozen water?", "ice"),
        ("What colour is a clear sky?", "blue"), ("What is the largest ocean?", "Pacific"), ("What is 3 * 3?", "9")]

CONTAINS = '''
def contains_keyword(completions, keyword, **kwargs):
    """1.0 when the row's keyword appears anywhere in the completion."""
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if str(k) in t else 0.0 for t, k in zip(texts, keyword)]
'''

HEDGES = ["or_hedge", "boxes", "listed", "maybe", "negated", "retracted", "gold_in_reasoning"]


def write_config(tmp_path: Path, rewards: list, system_prompt: str = "plain") -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": a, "keyword": a}) + "\n" for q, a in ROWS))
    cfg = {"model": {"id": "unused"}, "rewards": rewards, "report_to": [],
           "dataset": {"name": "files", "params": {"path": str(data)}, "system_prompt": system_prompt}}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def check(tmp_path: Path, cfg: Path) -> tuple[int, dict]:
    code = main(["check", str(cfg), "--json", str(tmp_path / "r.json")])
    return code, json.loads((tmp_path / "r.json").read_text())[0]


@pytest.fixture
def no_model(installed_plugins, monkeypatch):
    import grpo_core.config.models

    monkeypatch.setattr(grpo_core.config.models, "load", lambda *a, **k: pytest.fail("a model was loaded"))


def test_a_containment_reward_of_ones_own_fails_naming_it_and_the_hedges(tmp_path, capsys, no_model):
    (tmp_path / "kw.py").write_text(CONTAINS)
    code, report = check(tmp_path, write_config(tmp_path, [f"{tmp_path / 'kw.py'}:contains_keyword"]))
    out = capsys.readouterr().out
    assert code == 1 and report["ok"] is False
    results = {r["probe"]: r for r in report["probes"]["results"]}
    for name in HEDGES:  # each holds the keyword: 1.00 beside the gold's 1.00
        assert results[name]["means"]["contains_keyword"] == 1.0
        assert results[name]["failures"] == [
            "contains_keyword pays it as much as the gold on 8 of 8 rows (rows [0, 1, 2, 3, 4, 5, 6, 7]: gold "
            "'Paris', gold 'Rome', gold 'Mars')"]
    assert report["hedge_paying"] == [{"reward": "contains_keyword", "correctness": False, "probes": HEDGES,
                                       "rows": 8, "gold": 1.0, "wrong": 0.0}]
    assert ("  FAIL contains_keyword reads the answer (it pays the gold 1.00 and a wrong answer written the same "
            "way 0.00, above it on 8 of 8 rows) and pays or_hedge, boxes, listed, maybe, negated, retracted, "
            "gold_in_reasoning as much as the gold: declared a correctness reward or not, it would teach the model "
            "to hedge. Make it read the one final answer; or, if it is not meant to judge answers (a topic or "
            "mention reward), mark it: register(..., reads_answers=False) in its plugin, or reads_answers = False "
            "on its function.") in out.splitlines()
    assert out.rstrip().endswith("check: FAILED (grpo train stops here; --no-check skips it)")


def test_marked_as_not_reading_answers_it_passes(tmp_path, capsys, no_model):
    (tmp_path / "kw.py").write_text(CONTAINS + "\ncontains_keyword.reads_answers = False\n")
    code, report = check(tmp_path, write_config(tmp_path, [f"{tmp_path / 'kw.py'}:contains_keyword"]))
    assert code == 0, capsys.readouterr().out
    assert report["hedge_paying"] == []


def contains(completions, keyword, **kwargs):
    return [1.0 if str(k) in grpo_core.completion_text(c) else 0.0 for c, k in zip(completions, keyword)]


@pytest.mark.parametrize("declared, code", [({}, 1), ({"reads_answers": False}, 0), ({"range": (0, 1)}, 1)])
def test_a_third_party_containment_reward_fails_unless_registered_as_not_reading_answers(
        tmp_path, capsys, register_plugin, no_model, declared, code):
    mod = types.ModuleType("acme_kw")
    mod.register_rewards = grpo_core.hookimpl(lambda register: register("acme.mentions", contains, **declared))
    register_plugin(mod, name="acme_kw")
    got, report = check(tmp_path, write_config(tmp_path, ["acme.mentions"]))
    assert got == code, capsys.readouterr().out
    assert [h["probes"] for h in report["hedge_paying"]] == ([HEDGES] if code else [])


def test_declared_a_correctness_reward_it_fails_with_the_same_line(tmp_path, capsys, register_plugin, no_model):
    mod = types.ModuleType("acme_kw")
    mod.register_rewards = grpo_core.hookimpl(
        lambda register: register("acme.keyword", contains, correctness=True, reads_answers=False))
    register_plugin(mod, name="acme_kw")
    code, report = check(tmp_path, write_config(tmp_path, ["acme.keyword"]))
    assert code == 1  # a correctness reward reads answers, whatever else it declares
    assert (f"  FAIL acme.keyword, a correctness reward, pays {', '.join(HEDGES)} as much as the gold: it pays a "
            f"hedge like a right answer; make it read the one final answer (math.correctness does).") \
        in capsys.readouterr().out.splitlines()


WORD_ANSWER = '''
import re


def word_answer(completions, **kwargs):
    """1.0 when the completion's Answer: line starts with a capital (a name, not a number)."""
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if re.search(r"Answer:[ ]*[A-Z]", t) else 0.0 for t in texts]
'''


def test_a_reward_of_the_answers_shape_pays_a_same_shape_wrong_answer_and_is_not_held_to_the_hedges(
        tmp_path, capsys, no_model):
    """It pays 'Paris' and not gold+1's '0' (4 of 8 rows: Paris, Rome, Mars, Pacific), but
    pays the wrong answer of the gold's own shape ('Qbsjt') as the gold: it does not read
    the answer, so the hedges it pays as the gold ('Paris or ...' starts with a capital) do
    not fail it. Judged on gold+1 alone it would."""
    (tmp_path / "shape.py").write_text(WORD_ANSWER)
    code, report = check(tmp_path, write_config(tmp_path, [f"{tmp_path / 'shape.py'}:word_answer"]))
    assert code == 0, capsys.readouterr().out
    results = {r["probe"]: r for r in report["probes"]["results"]}
    assert report["probes"]["gold"]["word_answer"] == 0.5  # 4 capitalised golds of 8
    assert results["or_hedge"]["means"]["word_answer"] == 0.5 and results["or_hedge"]["failures"] == []
    assert report["hedge_paying"] == []


def test_format_and_length_rewards_pay_hedges_like_the_gold_and_pass(tmp_path, capsys, no_model):
    """They do not read answers: a wrong answer in the prompt's layout gets what the gold gets."""
    rewards = ["math.correctness", "format.xml_strict:0.1", "format.xml_incremental:0.1", "length.ideal(target=20):0.1",
               "repetition.ngram:0.1"]
    code, report = check(tmp_path, write_config(tmp_path, rewards, system_prompt="xml"))
    assert code == 0, capsys.readouterr().out
    results = {r["probe"]: r for r in report["probes"]["results"]}
    for name in ("or_hedge", "listed", "negated", "retracted"):
        assert results[name]["means"]["format.xml_strict"] == report["probes"]["gold"]["format.xml_strict"] == 1.0
    assert report["hedge_paying"] == []


def test_the_same_shape_wrong_answer():
    from grpo_core.checks.probes import shifted

    assert [shifted(g) for g in ("9", "Paris", "x-1.5", "Zz 09", "+")] == ["0", "Qbsjt", "y-2.6", "Aa 10", "+"]


def test_what_a_reward_declares_about_reading_answers():
    from grpo_core.checks.checks import declared_reads_answers

    def own(completions, **kwargs):
        return [0.0 for _ in completions]

    assert declared_reads_answers(own) is None
    own.reads_answers = False
    assert declared_reads_answers(own) is False
    assert declared_reads_answers(types.SimpleNamespace(func=own)) is False
