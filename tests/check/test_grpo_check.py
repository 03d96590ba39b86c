"""`grpo check CONFIG`: planted bugs are caught before any model; our own configs pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from grpo_core.cli import main

ROOT = Path(__file__).resolve().parents[2]

QUESTIONS = [("What is 2 + 2?", "4"), ("What is 3 * 3?", "9"), ("What is 10 - 1?", "9"),
             ("What is 6 / 2?", "3"), ("What is 5 + 7?", "12"), ("What is 8 - 5?", "3")]


def write_config(tmp_path: Path, rows: list[dict], rewards: list, **dataset) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"model": {"id": "unused"}, "rewards": rewards, "report_to": [],
           "dataset": {"name": "files", "params": {"path": str(data), "answer_field": "gold"},
                       "system_prompt": "plain", **dataset}}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def no_model(installed_plugins, monkeypatch):
    """Our plugins as installed; loading a model fails the test."""
    import grpo_core.config.models

    monkeypatch.setattr(grpo_core.config.models, "load", lambda *a, **k: pytest.fail("a model was loaded"))


def test_a_gold_column_the_reward_cannot_read_fails_with_its_rows_named(tmp_path, capsys, no_model):
    # multiple-choice golds ("B) 9") in rows 1 and 4: math.correctness reads no answer from them
    rows = [{"question": q, "gold": f"B) {a}" if i in (1, 4) else a} for i, (q, a) in enumerate(QUESTIONS)]
    cfg = write_config(tmp_path, rows, ["math.correctness"])
    assert main(["check", str(cfg), "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "FAIL math.correctness" in out and "66.7% at 1" in out  # 4 of 6 rows at full marks
    assert "row 1: gold 'B) 9'" in out and "row 4: gold 'B) 12'" in out
    gold = json.loads((tmp_path / "r.json").read_text())[0]["gold_self_test"][0]
    assert [s["row"] for s in gold["short"]] == [1, 4] and gold["ok"] is False


def test_readable_golds_pass_and_a_hedge_paying_reward_fails_a_probe(tmp_path, capsys, no_model):
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    cfg = write_config(tmp_path, rows, ["math.correctness"])
    assert main(["check", str(cfg)]) == 0
    assert "check: ok" in capsys.readouterr().out
    # math.exact compares text after normalising: "9 or 10" is not "9", so it pays no hedge
    cfg = write_config(tmp_path, rows, ["math.exact"])
    assert main(["check", str(cfg)]) == 0
    capsys.readouterr()


def test_a_system_prompt_given_as_text_is_checked_in_the_answer_layout_answer_template_names(tmp_path, capsys,
                                                                                             no_model):
    """A prompt given as text names no answer layout: the probes are written without an
    answer line, where a last-number reader is paid for "3 or 9" (the gold last), and the
    failure says how to name the layout; named, the same reward passes."""
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    text = "Reply with one line, 'Answer: <answer>', and nothing else."
    reward = ["math.correctness(fallback_last_number=True)"]
    assert main(["check", str(write_config(tmp_path, rows, reward, system_prompt=text))]) == 1
    out = capsys.readouterr().out
    assert "FAIL math.correctness" in out
    assert 'written with no answer line' in out and 'answer_template: "Answer: {answer}"' in out
    cfg = write_config(tmp_path, rows, reward, system_prompt=text, answer_template="Answer: {answer}")
    assert main(["check", str(cfg)]) == 0, capsys.readouterr().out
    # a failure with the layout known says nothing of it
    assert main(["check", str(write_config(tmp_path, rows, ["math.correctness(allow_expressions=True)"]))]) == 1
    assert "no answer line" not in capsys.readouterr().out


def test_a_reward_that_pays_a_sum_left_to_compute_fails_the_unevaluated_probe(tmp_path, capsys, no_model):
    # math-verify finds "5 + 1" equal to 6: a model that restates "What is 5 + 1?" would be paid for it
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    cfg = write_config(tmp_path, rows, ["math.correctness(allow_expressions=True)"])
    assert main(["check", str(cfg)]) == 1
    out = capsys.readouterr().out
    assert "unevaluated" in out and "pays it as much as the gold on 6 of 6 rows" in out
    cfg = write_config(tmp_path, rows, ["math.correctness"])  # the default: an answer must be a value
    assert main(["check", str(cfg)]) == 0, capsys.readouterr().out


def test_a_reward_that_pays_a_hedge_fails_the_probes(tmp_path, capsys, register_plugin, no_model):
    import types

    import grpo_core

    def contains(completions, answer, **kwargs):
        """1.0 when the gold appears anywhere in the completion: pays every hedge."""
        return [float(str(a) in grpo_core.completion_text(c)) for c, a in zip(completions, answer)]

    mod = types.ModuleType("hedgy")
    mod.register_rewards = grpo_core.hookimpl(
        lambda register: register("hedgy.correctness", contains, correctness=True))
    register_plugin(mod, name="hedgy")
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    cfg = write_config(tmp_path, rows, ["hedgy.correctness"])
    assert main(["check", str(cfg), "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "ok   hedgy.correctness" in out  # the gold itself is fine: 100 % at 1
    results = {r["probe"]: r for r in json.loads((tmp_path / "r.json").read_text())[0]["probes"]["results"]}
    for name in ("or_hedge", "boxes", "listed", "maybe", "negated", "retracted", "gold_in_reasoning"):
        assert results[name]["means"]["hedgy.correctness"] == 1.0  # contains the gold every time
        assert results[name]["failures"][0].startswith(
            "hedgy.correctness pays it as much as the gold on 6 of 6 rows (rows [0, 1, 2, 3, 4, 5]")
    for name in ("empty", "empty_tags", "question_copied", "question_numbers"):
        assert results[name]["failures"] == [], name  # no question above holds its own answer


def register_reward(register_plugin, name: str, func, **declared) -> None:
    import types

    import grpo_core

    mod = types.ModuleType(name.split(".")[0])
    mod.register_rewards = grpo_core.hookimpl(lambda register: register(name, func, **declared))
    register_plugin(mod, name=name.split(".")[0])


def test_a_reward_that_pays_hedges_on_half_the_rows_fails_naming_them(tmp_path, capsys, register_plugin, no_model):
    """A mean would hide it (0.5 < the gold's 1.0); judged per row, 3 of 6 rows pay the hedge."""
    import grpo_core

    def half(completions, answer, **kwargs):
        """Reads the last number, except on even golds, where any mention of the gold counts."""
        out = []
        for c, a in zip(completions, answer):
            text = grpo_core.completion_text(c)
            numbers = [w.strip(".,:") for w in text.split() if w.strip(".,:").isdigit()]
            out.append(float(str(a) in numbers if int(a) % 2 == 0 else bool(numbers) and numbers[-1] == str(a)))
        return out

    register_reward(register_plugin, "half.correctness", half, correctness=True, range=(0, 1))
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]  # even golds: 4, 12 (rows 0, 4); odd: 9, 9, 3, 3
    cfg = write_config(tmp_path, rows, ["half.correctness"])
    assert main(["check", str(cfg), "--json", str(tmp_path / "r.json")]) == 1
    results = {r["probe"]: r for r in json.loads((tmp_path / "r.json").read_text())[0]["probes"]["results"]}
    # "4 or 5": the gold is among the numbers on even rows only -> rows 0 and 4 of 6 = 33 % > PROBE_SHARE 10 %
    assert results["or_hedge"]["means"]["half.correctness"] == pytest.approx(2 / 6)
    assert results["or_hedge"]["failures"][0].startswith(
        "half.correctness pays it as much as the gold on 2 of 6 rows (rows [0, 4]")
    assert "FAIL" in capsys.readouterr().out


def test_a_tag_reward_whose_tags_differ_from_the_prompts_fails_as_no_signal(tmp_path, capsys, no_model):
    """The xml prompt writes <think>/<answer>; format.xml_strict(think_tag='reasoning') pays 0 to the
    gold and to every probe: a reward that teaches nothing."""
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    cfg = write_config(tmp_path, rows, ["math.correctness", "format.xml_strict(think_tag='reasoning'):0.5"],
                       system_prompt="xml")
    assert main(["check", str(cfg), "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "FAIL format.xml_strict gives every completion tried 0.00, the gold included" in out
    report = json.loads((tmp_path / "r.json").read_text())[0]
    assert report["no_signal"] == {"format.xml_strict": 0.0}
    # with the prompt's own tags it gives a signal (1 for the gold, 0 for an empty completion)
    cfg = write_config(tmp_path, rows, ["math.correctness", "format.xml_strict:0.5"], system_prompt="xml")
    assert main(["check", str(cfg)]) == 0, capsys.readouterr().out


def test_full_marks_are_the_declared_maximum_not_the_best_row(tmp_path, capsys, register_plugin, no_model):
    """A reward declaring range (0, 2) that pays the gold 1.0 on every row is at its maximum on none."""
    def one(completions, **kwargs):
        return [1.0 if "Answer:" in str(c) else 0.0 for c in completions]

    register_reward(register_plugin, "flat.score", one, range=(0, 2))
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    cfg = write_config(tmp_path, rows, ["math.correctness", "flat.score:0.1"])
    main(["check", str(cfg), "--json", str(tmp_path / "r.json")])
    gold = {g["reward"]: g for g in json.loads((tmp_path / "r.json").read_text())[0]["gold_self_test"]}
    assert gold["flat.score"]["top"] == 2.0 and gold["flat.score"]["share_at_top"] == 0.0
    assert gold["math.correctness"]["top"] == 1.0 and gold["math.correctness"]["share_at_top"] == 1.0


# a reward of one's own that raises on every `every`-th call, each call noted in calls.jsonl
RAISING = """
import json
from pathlib import Path

CALLS = []


def raising(completions, every: int = 3, **kwargs):
    if not completions:  # the empty probe when the reward is bound
        return []
    CALLS.append(len(completions))
    raised = len(CALLS) % every == 0
    with open(Path(__file__).with_name("calls.jsonl"), "a") as log:
        log.write(json.dumps({"items": len(completions), "raised": raised}) + "\\n")
    if raised:
        raise ValueError(f"cannot score call {len(CALLS)}")
    return [1.0 if "Answer:" in c[0]["content"] else 0.0 for c in completions]
"""


@pytest.mark.parametrize("every, code", [(3, 0), (1, 1)])
def test_a_reward_that_raises_is_reported_with_its_failed_share_not_a_crash(every, code, tmp_path, capsys, no_model,
                                                                            monkeypatch):
    """The check calls rewards as training does (rewards/policy.py): a batch that raises
    is scored item by item and the items that raise again score None, are not judged
    (math.correctness keeps its 100 %) and are counted; past health.max_reward_errors
    (0.2) the reward fails the check, as training would stop on it."""
    (tmp_path / "my_rewards.py").write_text(RAISING)
    monkeypatch.chdir(tmp_path)
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS * 50]  # 300 rows: two gold batches of the check
    cfg = write_config(tmp_path, rows, ["math.correctness", f"my_rewards.py:raising(every={every}):0.5"])
    assert main(["check", str(cfg), "--json", str(tmp_path / "r.json")]) == code
    out = capsys.readouterr().out
    calls = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    lost = sum(1 for c in calls if c["raised"] and c["items"] == 1)  # batches here are larger than one
    items = sum(c["items"] for c in calls if c["items"] > 1)  # each completion is in one batch call
    report = json.loads((tmp_path / "r.json").read_text())[0]
    assert report["reward_errors"] == [{"reward": "raising", "failed": lost, "items": items, "max_share": 0.2,
                                        "ok": every == 3}]
    assert out.count("raised ValueError: cannot score call") == 1 and out.count("Traceback") == 1  # named once
    assert "100.0% at 1" in out  # math.correctness judged on every gold, unaffected
    if every == 3:  # the third call, a batch, raised; a third of its items raised again alone
        assert 0 < lost < items * 0.2 and f"note raising failed on {lost} of {items} completions" in out
        assert "check: ok" in out
    else:
        assert lost == items and f"FAIL raising failed on {items} of {items} completions (100.0% > " \
            "health.max_reward_errors 0.2): training would stop on it" in out
        assert "check: FAILED" in out


@pytest.mark.parametrize("config", ["quickstart.yaml", "quickstart-gpu.yaml", "strict-tags.yaml", "two-stage.yaml"])
def test_the_examples_pass(config, capsys, no_model, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["check", f"examples/{config}", "--limit", "300"]) == 0, capsys.readouterr().out


def test_check_imports_neither_trl_nor_peft_once_their_field_names_are_cached(tmp_path):
    """GRPOConfig's and LoraConfig's field names are cached per version: the first check
    imports TRL to read them (~9 s on 2 cores), later ones run in seconds without it."""
    import os
    import subprocess
    import sys

    code = ("import sys; from grpo_core.cli import main; rc = main(['check', 'examples/quickstart.yaml', "
            "'--limit', '50']); print(rc, 'trl' in sys.modules, 'peft' in sys.modules)")
    env = {**os.environ, "GRPO_CACHE_DIR": str(tmp_path), "GRPO_PLUGINS": "grpo-datasets,grpo-rewards-math,grpo-rewards-format"}
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert [r.stdout.split("\n")[-2] for r in runs] == ["0 True True", "0 False False"], runs[1].stderr[-2000:]
    assert len(list((tmp_path / "config").glob("*.json"))) == 2


def test_a_correctness_reward_is_judged_on_the_golds_it_did_not_fail_on():
    """Rows a reward raised on are counted as failures, not as golds it cannot read: a
    correctness reward that reads every gold but raises on three of six rows passes the
    gold self-test at 100 % of the three it scored (the check fails it for the failed
    share instead, 3 of 6 > 0.2, as training would stop on it)."""
    from grpo_core.checks.checks import gold_self_test
    from grpo_core.rewards.policy import PolicySettings
    from grpo_core.rewards.reward import Reward

    def reads(completions, answer, **kwargs):
        if any(a in ("3", "12") for a in answer):
            raise ValueError("no reader for 3 and 12")
        return [1.0 if a in c[0]["content"] else 0.0 for c, a in zip(completions, answer)]

    reward = Reward("test.reads", reads, correctness=True)
    rows = [{"question": q, "answer": a} for q, a in QUESTIONS]  # golds 4 9 9 3 12 3: rows 3, 4, 5 raise
    (guard,) = PolicySettings().guard_check([reward], log=lambda line: None)
    (gold,) = gold_self_test([reward], rows, "Answer: {answer}", [guard])
    assert (gold.share, gold.ok, gold.short) == (1.0, True, [])
    assert (guard.failed, guard.items, guard.ok) == (3, 6, False)


def test_json_on_stdout_is_the_report_alone_with_ok_per_stage(tmp_path, capsys, no_model):
    """`--json -` for a CI gate: the JSON alone on stdout (what grpo check says goes to
    stderr), each stage with `ok`; the exit code says the same."""
    rows = [{"question": q, "gold": a} for q, a in QUESTIONS]
    assert main(["check", str(write_config(tmp_path, rows, ["math.correctness"])), "--json", "-"]) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert [stage["ok"] for stage in report] == [True] and "check: ok" in out.err
    rows[1]["gold"] = "B) 9"  # a gold math.correctness cannot read: the check fails
    assert main(["check", str(write_config(tmp_path, rows, ["math.correctness"])), "--json", "-"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report[0]["ok"] is False and report[0]["gold_self_test"][0]["ok"] is False
