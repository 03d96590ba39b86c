"""What --resume does with each changed setting: one pure function, a table of cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_core.base.errors import ConfigError
from grpo_core.run.resume import Found, compare, given_checkpoint, settings_of, starts_of

SAVED = {"learning_rate": 1e30, "lr_scheduler_type": "linear", "warmup_steps": 0, "max_grad_norm": 1.0,
         "beta": 0.0, "max_steps": 10, "num_generations": 4, "per_device_train_batch_size": 8,
         "gradient_accumulation_steps": 1, "steps_per_generation": 1, "num_iterations": 1, "model": "m",
         "lora": {"r": 16, "lora_alpha": 32, "target_modules": "all-linear"},
         "reward_weights": {"math.correctness": 1.0}, "health": {"window": 5}, "seed": 0, "temperature": 1.0,
         "dataset": {"name": "gsm8k", "params": {}, "split": "train", "system_prompt": None, "few_shot": 0,
                     "answer_template": None, "rows": 7473, "fingerprint": "1a1a"},
         "reward_params": {"math.correctness": {}}, "sampling": {"dynamic": False, "max_rounds": 3}}
DATA = SAVED["dataset"]


@pytest.mark.parametrize("change, applied, refused", [
    ({}, [], []),
    ({"learning_rate": 1e-3}, ["learning_rate 1e+30 -> 0.001 from step 3"], []),
    ({"lr_scheduler_type": "constant"}, ["lr_scheduler_type linear -> constant from step 3"], []),
    ({"max_grad_norm": 0.5, "beta": 0.04}, ["max_grad_norm 1 -> 0.5 from step 3", "beta 0 -> 0.04 from step 3"], []),
    ({"max_steps": 20}, ["max_steps 10 -> 20 from step 3 (the linear learning-rate schedule is now that of a run "
                          "of 20 steps, as with TRL's resume_from_checkpoint; lr_scheduler_type: constant keeps one "
                          "rate)"], []),
    ({"max_steps": 20, "lr_scheduler_type": "constant"},  # a rate that does not depend on max_steps: nothing to say
     ["lr_scheduler_type linear -> constant from step 3", "max_steps 10 -> 20 from step 3"], []),
    ({"reward_weights": {"math.correctness": 2.0}}, ["reward weight math.correctness 1 -> 2 from step 3"], []),
    ({"reward_weights": {"math.correctness": 1.0, "length.ideal": 0.1}},
     ["reward weight length.ideal absent -> 0.1 from step 3"], []),
    ({"health": {"window": 3}}, ["health.window 5 -> 3 from step 3"], []),
    ({"num_generations": 8}, [], ["num_generations: 4 in the checkpoint, 8 now"]),
    ({"per_device_train_batch_size": 4}, [], ["per_device_train_batch_size: 8 in the checkpoint, 4 now"]),
    ({"model": "other"}, [], ["model: m in the checkpoint, other now"]),
    ({"lora": {"r": 8, "lora_alpha": 32, "target_modules": "all-linear"}}, [],
     ["lora: {'r': 16, 'lora_alpha': 32, 'target_modules': 'all-linear'} in the checkpoint, "
      "{'r': 8, 'lora_alpha': 32, 'target_modules': 'all-linear'} now"]),
    ({"learning_rate": 1e-3, "steps_per_generation": 2}, ["learning_rate 1e+30 -> 0.001 from step 3"],
     ["steps_per_generation: 1 in the checkpoint, 2 now"]),
    # what defines the data and its order: refused by name
    ({"dataset": {**DATA, "name": "math"}}, [], ["dataset.name: gsm8k in the checkpoint, math now"]),
    ({"dataset": {**DATA, "params": {"level": 2}, "rows": 500}}, [],
     ["dataset.params: {} in the checkpoint, {'level': 2} now", "dataset.rows: 7473 in the checkpoint, 500 now"]),
    ({"dataset": {**DATA, "split": "train[:100]"}}, [], ["dataset.split: train in the checkpoint, train[:100] now"]),
    ({"dataset": {**DATA, "system_prompt": "xml"}}, [], ["dataset.system_prompt: None in the checkpoint, xml now"]),
    ({"dataset": {**DATA, "few_shot": 2, "rows": 7471}}, [],
     ["dataset.few_shot: 0 in the checkpoint, 2 now", "dataset.rows: 7473 in the checkpoint, 7471 now"]),
    ({"dataset": {**DATA, "answer_template": "#### {answer}"}}, [],
     ["dataset.answer_template: None in the checkpoint, #### {answer} now"]),
    # the same settings, other rows (a file edited in place): the fingerprint names it, only then
    ({"dataset": {**DATA, "fingerprint": "2b2b"}}, [],
     ["dataset content: the rows' fingerprint is 1a1a in the checkpoint, 2b2b now, with the same dataset settings "
      "and 7473 rows (a data file edited in place, or a hub dataset's new revision)"]),
    ({"dataset": {**DATA, "rows": 7474, "fingerprint": "2b2b"}}, [],
     ["dataset.rows: 7473 in the checkpoint, 7474 now"]),
    ({"seed": 1}, [], ["seed: 0 in the checkpoint, 1 now"]),
    # sampling and reward parameters: taken, each named
    ({"temperature": 0.7}, ["temperature 1 -> 0.7 from step 3"], []),
    ({"sampling": {"dynamic": True, "max_rounds": 3}}, ["sampling.dynamic False -> True from step 3"], []),
    ({"reward_params": {"math.correctness": {"fallback_last_number": True}}},
     ["reward parameters math.correctness {} -> {'fallback_last_number': True} from step 3"], []),
])
def test_what_may_change_on_resume_and_what_may_not(change, applied, refused):
    changes = compare(SAVED, {**SAVED, **change}, step=3)
    assert changes.applied == applied and changes.refused == refused


def test_a_checkpoint_from_before_the_dataset_was_recorded_is_compared_on_what_it_has():
    old = {k: v for k, v in SAVED.items() if k not in ("dataset", "seed", "sampling", "reward_params")}
    changes = compare(old, {**SAVED, "dataset": {**DATA, "name": "math"}, "seed": 5}, step=3)
    assert changes.refused == [] and changes.applied == []
    # recorded before the fingerprint was: the rest of the dataset is compared, not the fingerprint
    no_print = {k: v for k, v in DATA.items() if k != "fingerprint"}
    assert compare({**SAVED, "dataset": no_print}, SAVED, step=3).refused == []
    assert compare({**SAVED, "dataset": no_print}, {**SAVED, "dataset": {**DATA, "split": "test"}}, step=3).refused \
        == ["dataset.split: train in the checkpoint, test now"]


# ------------------------------------------------------------------ what a checkpoint records


def run_config(**dataset):
    """A run's sections as settings_of reads them (the dataset section's fields given)."""
    from types import SimpleNamespace

    from grpo_core.config.schema import DatasetSection, HealthSection, SamplingSection

    return SimpleNamespace(model=SimpleNamespace(id="m"), lora=None,
                           dataset=DatasetSection(**{"name": "toy", **dataset}), health=HealthSection(),
                           sampling=SamplingSection())


def stage_plan():
    from types import SimpleNamespace

    def digits(completions, **kw):
        return [0.0 for _ in completions]

    args = SimpleNamespace(**{k: v for k, v in SAVED.items() if not isinstance(v, dict)})
    return SimpleNamespace(args=args, funcs=[digits], weights=[1.0])


@pytest.mark.parametrize("setting, before, after, line", [
    ("system_prompt", "Answer with a number.", "Say a number.",
     "dataset.system_prompt: Answer with a number. in the checkpoint, Say a number. now"),
    ("few_shot", 0, 2, "dataset.few_shot: 0 in the checkpoint, 2 now"),
    ("answer_template", None, "Answer: {answer}",
     "dataset.answer_template: None in the checkpoint, Answer: {answer} now"),
    ("split", "train", "train[:16]", "dataset.split: train in the checkpoint, train[:16] now"),
    ("params", {"size": 32}, {"size": 16}, "dataset.params: {'size': 32} in the checkpoint, {'size': 16} now"),
])
def test_each_dataset_setting_is_recorded_and_a_change_refused_by_name(setting, before, after, line):
    # through settings_of, as training records a checkpoint: a setting left out of the record is never compared
    saved = settings_of(run_config(**{setting: before}), stage_plan(), 32, "1a1a")
    now = settings_of(run_config(**{setting: after}), stage_plan(), 32, "1a1a")
    assert compare(saved, now, step=2).refused == [line]
    assert compare(saved, settings_of(run_config(**{setting: before}), stage_plan(), 32, "1a1a"), step=2).refused == []


def test_the_row_count_and_the_rows_fingerprint_are_recorded():
    cfg, plan = run_config(), stage_plan()
    saved = settings_of(cfg, plan, 32, "1a1a")
    assert saved["dataset"]["rows"] == 32 and saved["dataset"]["fingerprint"] == "1a1a"
    assert compare(saved, settings_of(cfg, plan, 33, "2b2b"), step=2).refused == [
        "dataset.rows: 32 in the checkpoint, 33 now"]
    assert compare(saved, settings_of(cfg, plan, 32, "2b2b"), step=2).refused == [
        "dataset content: the rows' fingerprint is 1a1a in the checkpoint, 2b2b now, with the same dataset settings "
        "and 32 rows (a data file edited in place, or a hub dataset's new revision)"]


def test_the_fingerprint_is_of_the_rows_content():
    from datasets import Dataset

    from grpo_core.run.resume import fingerprint

    rows = {"question": ["What is 1 + 1?", "What is 2 + 1?"], "answer": ["2", "3"]}
    same = fingerprint(Dataset.from_dict(rows))
    assert same == fingerprint(Dataset.from_dict({"answer": ["2", "3"], "question": rows["question"]}))  # column order
    assert len(same) == 16 and int(same, 16) >= 0
    edited = {**rows, "question": ["What is 1 + 1?", "What is 2 + 2?"]}  # one question edited in place
    swapped = {k: v[::-1] for k, v in rows.items()}  # the same rows in another order: another data position
    shown = Dataset.from_dict(rows).select([1, 0])  # an index mapping, as a shuffle leaves: the rows as seen
    assert len({same, fingerprint(Dataset.from_dict(edited)), fingerprint(Dataset.from_dict(swapped))}) == 3
    assert fingerprint(shown) == fingerprint(Dataset.from_dict(swapped))


def test_the_fingerprint_reads_every_row_past_the_first_batch():
    # rows are hashed 1,024 at a time: a change past the first batch (row 1,300 of 1,500, and the
    # last row) changes the fingerprint, as a change at row 0 does
    from datasets import Dataset

    from grpo_core.run.resume import fingerprint

    def rows(changed: int | None = None) -> Dataset:
        questions = [f"What is {i} + 1?" for i in range(1500)]
        if changed is not None:
            questions[changed] = "What is 40 + 2?"
        return Dataset.from_dict({"question": questions, "answer": [str(i + 1) for i in range(1500)]})

    base = fingerprint(rows())
    assert fingerprint(rows()) == base  # the same rows: the same fingerprint
    others = {fingerprint(rows(i)) for i in (0, 1023, 1024, 1300, 1499)}
    assert base not in others and len(others) == 5


# ------------------------------------------------------------------ which stage starts where

C2, C4, C10 = Path("out/checkpoint-2"), Path("out/checkpoint-4"), Path("out/b/checkpoint-10")
SKIP_4 = ("Stage 'main' already finished (4 steps); skipping. To train it longer, raise max_steps "
          "(--resume --max_steps N).")


def plain(starts):
    """Each start as (name, "skip" N | "from" step | "new")."""
    return [(s.name, ("skip", s.finished) if s.finished is not None else
             ("from", s.step) if s.checkpoint is not None else "new") for s in starts]


@pytest.mark.parametrize("found, expected, said", [
    # one stage: nothing yet; interrupted at step 2 of 4
    ([Found("main", 4)], [("main", "new")], []),
    ([Found("main", 4, checkpoint=C2, step=2)], [("main", ("from", 2))], ["Resuming from out/checkpoint-2 (step 2)."]),
    # finished with 4 steps: max_steps 4 again, 8 (extend), 2 (nothing taken back)
    ([Found("main", 4, 4, checkpoint=C4, step=4)], [("main", ("skip", 4))],
     [SKIP_4]),
    ([Found("main", 8, 4, checkpoint=C4, step=4)], [("main", ("from", 4))],
     ["Stage 'main' finished with 4 steps; max_steps 8: resuming from out/checkpoint-4 (step 4)."]),
    ([Found("main", 2, 4, checkpoint=C4, step=4)], [("main", ("skip", 4))],
     ["Stage 'main' already finished (4 steps; max_steps 2 now); skipping."]),
    # a checkpoint named on the command line: from there, even in a finished stage (TRL's resume_from_checkpoint)
    ([Found("main", 4, 4, checkpoint=C2, step=2, given=True)], [("main", ("from", 2))],
     ["Stage 'main' finished with 4 steps; the checkpoint named with --resume: resuming from out/checkpoint-2 "
      "(step 2); steps 3-4 train again."]),
    ([Found("main", 4, 4, checkpoint=C4, step=4, given=True)], [("main", ("skip", 4))],
     [SKIP_4]),
    # two stages: the last one grows; an earlier one grows while no later one has trained
    ([Found("a", 10, 10, checkpoint=C10, step=10), Found("b", 20, 10, checkpoint=C10, step=10)],
     [("a", ("skip", 10)), ("b", ("from", 10))], None),
    ([Found("a", 20, 10, checkpoint=C10, step=10), Found("b", 10)], [("a", ("from", 10)), ("b", "new")], None),
    ([Found("a", 10, 10, checkpoint=C10, step=10), Found("b", 10, checkpoint=C4, step=4)],
     [("a", ("skip", 10)), ("b", ("from", 4))],
     ["Stage 'a' already finished (10 steps); skipping. To train it longer, raise max_steps (--resume --max_steps N).",
      "Resuming stage 'b' from out/checkpoint-4 (step 4)."]),
])
def test_where_each_stage_starts(found, expected, said):
    starts = starts_of(found)
    assert plain(starts) == expected
    if said is not None:
        assert [line for s in starts for line in s.lines] == said


@pytest.mark.parametrize("found, message", [
    ([Found("a", 20, 10, checkpoint=C10, step=10), Found("b", 20, 10, checkpoint=C10, step=10)],
     "Stage 'a' finished with 10 steps and stage 'b' has trained on from its weights since, so it cannot train "
     "again (max_steps 20). Keep its max_steps at 10 (--max_steps on the command line sets every stage: set the "
     "last stage's in the config instead), or start a new run."),
    ([Found("a", 20, 10, checkpoint=C10, step=10), Found("b", 10, checkpoint=C4, step=4)], "stage 'b' has trained"),
    ([Found("main", 8, 4)],  # save_strategy: no
     "Stage 'main' finished with 4 steps and left no checkpoint to continue from (save_strategy: no), so it cannot "
     "train to max_steps 8."),
])
def test_a_finished_stage_that_cannot_grow_is_refused_by_name(found, message):
    with pytest.raises(ConfigError) as exc:
        starts_of(found)
    assert message in str(exc.value)


def test_a_checkpoint_named_with_resume(tmp_path, monkeypatch):
    from types import SimpleNamespace

    def checkpoint(path):
        path.mkdir(parents=True)
        (path / "trainer_state.json").write_text('{"global_step": 2}')
        return path

    out = tmp_path / "out"
    one = [SimpleNamespace(output_dir=out)]
    two = [SimpleNamespace(output_dir=out / "a"), SimpleNamespace(output_dir=out / "b")]
    c2, b3 = checkpoint(out / "checkpoint-2"), checkpoint(out / "b" / "checkpoint-3")
    elsewhere = checkpoint(tmp_path / "x" / "checkpoint-5")
    monkeypatch.chdir(tmp_path)
    assert given_checkpoint(True, one) is None and given_checkpoint("true", one) is None
    assert given_checkpoint(str(c2), one) == (0, c2)
    assert given_checkpoint("checkpoint-2", one) == (0, out / "checkpoint-2")  # a name inside output_dir
    assert given_checkpoint("checkpoint-3", two) == (1, out / "b" / "checkpoint-3")  # in the stage's folder
    assert given_checkpoint(str(b3), two) == (1, b3)
    assert given_checkpoint(str(elsewhere), one) == (0, elsewhere)  # one stage: any checkpoint, as TRL takes it
    with pytest.raises(ConfigError, match="not a checkpoint of a stage of this config"):
        given_checkpoint(str(elsewhere), two)
    with pytest.raises(ConfigError, match="--resume checkpoint-9: no such checkpoint directory"):
        given_checkpoint("checkpoint-9", one)
    (out / "adapter").mkdir()
    with pytest.raises(ConfigError, match="is not a checkpoint \\(no trainer_state.json\\)"):
        given_checkpoint("adapter", one)
